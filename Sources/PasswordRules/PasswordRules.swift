// The Password Rules language of HTML's `passwordrules` attribute and UIKit's `UITextInputPasswordRules`
// ("Customizing Password AutoFill rules", developer.apple.com/password-rules), read the way Apple's published
// reference parser reads it: apple/password-manager-resources, tools/PasswordRulesParser.js at commit a1b610f
// (2026-05-18), `parsePasswordRules(input)` without the minified-format flag, the mode a browser generates with.
// Written from reading that parser; none of its code is copied. Its behaviour, kept here on purpose:
//
// - Property names (`required`, `allowed`, `max-consecutive`, `minlength`, `maxlength`) are case-sensitive;
//   class names (`upper`, `lower`, `digit`, `special`, `ascii-printable`, `unicode`) are not.
// - An unknown property name, a missing `:`, a bad value or a stray character between properties makes the whole
//   descriptor void: the result is the default, `allowed: ascii-printable`. A property that does not start with a
//   letter or `-` ends the descriptor there and keeps what came before. A bad value that runs to the end of the
//   descriptor (`required: upper,`) drops that one property.
// - An empty value (`required: ;`) and an integer 0 are ignored; `minlength: 12 ;` (a space before `;`) drops the
//   property too, as the reference does.
// - `[…]` holds ASCII printable characters; others are skipped. `-` counts only as the first character, later
//   ones are skipped. The class ends at the first `]`, and `]]` there means a literal `]` and the end.
//   An unterminated `[…` at the end of the descriptor is dropped without voiding anything.
// - Every `required` is kept, in order; the union of all `allowed` and every `required` becomes one `allowed`
//   (`ascii-printable` when empty). The largest `minlength`, the smallest `maxlength` and the smallest
//   `max-consecutive` win. Within a set of classes, the first `unicode` or `ascii-printable` met swallows the
//   rest; otherwise the characters are folded into `upper`, `lower`, `digit`, `special` where a set is complete,
//   and the remaining characters form one custom class in ASCII order, letters and digits before specials.

/// A character class of the Password Rules language.
public enum PasswordCharacterClass: Hashable, Sendable {
    /// `A`–`Z`.
    case upper
    /// `a`–`z`.
    case lower
    /// `0`–`9`.
    case digit
    /// The 33 ASCII printable characters that are not letters or digits, space included.
    case special
    /// The 95 characters from space to `~`.
    case asciiPrintable
    /// Any character.
    case unicode
    /// `[…]`: ASCII printable characters (bytes 0x20–0x7E), in the parser's canonical order.
    case custom([UInt8])

    /// The name the language uses (`ascii-printable`), or the custom class in brackets with `-` first and `]`
    /// last, so that the text parses back to the same class.
    public var descriptor: String {
        switch self {
        case .upper: "upper"
        case .lower: "lower"
        case .digit: "digit"
        case .special: "special"
        case .asciiPrintable: "ascii-printable"
        case .unicode: "unicode"
        case .custom(let characters):
            "["
                + (characters.contains(UInt8(ascii: "-")) ? "-" : "")
                + String(
                    decoding: characters.filter { $0 != UInt8(ascii: "-") && $0 != UInt8(ascii: "]") }, as: UTF8.self)
                + (characters.contains(UInt8(ascii: "]")) ? "]" : "") + "]"
        }
    }
}

/// A parsed and combined descriptor: what a password generator must follow.
public struct PasswordRules: Hashable, Sendable, CustomStringConvertible {
    /// One entry per `required` property, in order: a password must contain a character of each (an empty entry,
    /// from `required: []`, is kept as the reference keeps it and asks for nothing).
    public var required: [[PasswordCharacterClass]]
    /// The characters a password may contain: never empty.
    public var allowed: [PasswordCharacterClass]
    /// No character may repeat more than this many times in a row.
    public var maxConsecutive: Int?
    /// The shortest length allowed (absent when no `minlength` above 0 was given).
    public var minLength: Int?
    /// The longest length allowed.
    public var maxLength: Int?

    public init(
        required: [[PasswordCharacterClass]] = [], allowed: [PasswordCharacterClass] = [.asciiPrintable],
        maxConsecutive: Int? = nil, minLength: Int? = nil, maxLength: Int? = nil
    ) {
        self.required = required
        self.allowed = allowed
        self.maxConsecutive = maxConsecutive
        self.minLength = minLength
        self.maxLength = maxLength
    }

    /// The rules a descriptor gives, as the reference parser combines them. Never fails: a malformed descriptor
    /// gives what a browser would use (often the default), and `diagnostics` says what was wrong.
    public init(parsing descriptor: String) {
        self = PasswordRules.parse(descriptor).rules
    }

    /// The rules and every problem met on the way, in order.
    public static func parse(_ descriptor: String) -> (rules: PasswordRules, diagnostics: [PasswordRulesDiagnostic]) {
        var parser = PasswordRulesParser(Array(descriptor.utf8))
        let properties = parser.parseProperties() ?? []
        return (combine(properties), parser.diagnostics)
    }

    /// The descriptor in the language's own syntax, parsing back to the same rules: `allowed` first (the
    /// reference lets the first `unicode` or `ascii-printable` it meets win, so `allowed: ascii-printable;
    /// required: unicode` must not become `required: unicode; allowed: …`), then each `required`,
    /// max-consecutive, minlength, maxlength.
    public var description: String {
        var parts = ["allowed: " + allowed.map(\.descriptor).joined(separator: ", ")]
        parts += required.map { "required: " + ($0.isEmpty ? "[]" : $0.map(\.descriptor).joined(separator: ", ")) }
        if let maxConsecutive { parts.append("max-consecutive: \(maxConsecutive)") }
        if let minLength { parts.append("minlength: \(minLength)") }
        if let maxLength { parts.append("maxlength: \(maxLength)") }
        return parts.joined(separator: "; ")
    }

    /// `parsePasswordRules`' second half: repeated properties combined.
    private static func combine(_ properties: [PasswordRulesParser.Property]) -> PasswordRules {
        var rules = PasswordRules(required: [], allowed: [])
        var allowedValues: [PasswordCharacterClass] = []
        var largestMinLength = 0
        for property in properties {
            switch property {
            case .required(let classes):
                let canonical = canonicalized(classes)
                rules.required.append(canonical)
                allowedValues += canonical
            case .allowed(let classes):
                allowedValues += classes
            case .maxConsecutive(let value):
                rules.maxConsecutive = min(value, rules.maxConsecutive ?? value)
            case .minLength(let value):
                largestMinLength = max(value, largestMinLength)
            case .maxLength(let value):
                rules.maxLength = min(value, rules.maxLength ?? value)
            }
        }
        rules.allowed = canonicalized(allowedValues)
        if rules.allowed.isEmpty { rules.allowed = [.asciiPrintable] }
        if largestMinLength > 0 { rules.minLength = largestMinLength }
        return rules
    }

    /// A set of classes in canonical form (the reference's `_canonicalizedPropertyValues`).
    static func canonicalized(_ classes: [PasswordCharacterClass]) -> [PasswordCharacterClass] {
        var set = ASCIIPrintableSet()
        for characterClass in classes {
            switch characterClass {
            case .unicode, .asciiPrintable: return [characterClass]
            default: set.insert(characterClass)
            }
        }
        var leftOver: [UInt8] = []
        var result: [PasswordCharacterClass] = []
        var complete: [Bool] = []
        for (named, ranges) in ASCIIPrintableSet.namedRanges {
            let present = ranges.flatMap { $0.filter(set.contains) }
            let all = present.count == ranges.reduce(0) { $0 + $1.count }
            complete.append(all)
            if all { result.append(named) } else { leftOver += present }
        }
        if complete.allSatisfy({ $0 }) { return [.asciiPrintable] }
        if !leftOver.isEmpty { result.append(.custom(leftOver)) }
        return result
    }
}

/// The 95 ASCII printable characters as bits.
struct ASCIIPrintableSet: Hashable, Sendable {
    private(set) var bits: (low: UInt64, high: UInt64) = (0, 0)

    static let printable: ClosedRange<UInt8> = 0x20...0x7E

    /// Upper, lower, digit and special, each with its ranges in ASCII order.
    static let namedRanges: [(PasswordCharacterClass, [ClosedRange<UInt8>])] = [
        (.upper, [UInt8(ascii: "A")...UInt8(ascii: "Z")]),
        (.lower, [UInt8(ascii: "a")...UInt8(ascii: "z")]),
        (.digit, [UInt8(ascii: "0")...UInt8(ascii: "9")]),
        (
            .special,
            [
                UInt8(ascii: " ")...UInt8(ascii: "/"), UInt8(ascii: ":")...UInt8(ascii: "@"),
                UInt8(ascii: "[")...UInt8(ascii: "`"), UInt8(ascii: "{")...UInt8(ascii: "~"),
            ]
        ),
    ]

    init() {}

    /// The characters of `classes`; `unicode` counts as ASCII printable, every character of which it includes.
    init(_ classes: [PasswordCharacterClass]) {
        for characterClass in classes { insert(characterClass) }
    }

    func contains(_ character: UInt8) -> Bool {
        guard Self.printable.contains(character) else { return false }
        let index = character - 0x20
        return index < 64 ? bits.low & (1 << index) != 0 : bits.high & (1 << (index - 64)) != 0
    }

    mutating func insert(_ character: UInt8) {
        guard Self.printable.contains(character) else { return }
        let index = character - 0x20
        if index < 64 { bits.low |= 1 << index } else { bits.high |= 1 << (index - 64) }
    }

    mutating func insert(_ characterClass: PasswordCharacterClass) {
        switch characterClass {
        case .asciiPrintable, .unicode:
            for character in Self.printable { insert(character) }
        case .custom(let characters):
            for character in characters { insert(character) }
        case .upper, .lower, .digit, .special:
            for (named, ranges) in Self.namedRanges where named == characterClass {
                for range in ranges { for character in range { insert(character) } }
            }
        }
    }

    /// The members in ASCII order.
    var characters: [UInt8] { Self.printable.filter(contains) }

    var isEmpty: Bool { bits == (0, 0) }

    static func == (lhs: Self, rhs: Self) -> Bool { lhs.bits == rhs.bits }
    func hash(into hasher: inout Hasher) {
        hasher.combine(bits.low)
        hasher.combine(bits.high)
    }
}
