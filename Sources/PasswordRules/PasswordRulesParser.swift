/// Something wrong in a descriptor, where the reference parser reports an error or a warning.
public struct PasswordRulesDiagnostic: Hashable, Sendable, CustomStringConvertible {
    public enum Code: String, Hashable, Sendable {
        /// A property name that is not `required`, `allowed`, `max-consecutive`, `minlength` or `maxlength`.
        case unknownProperty
        /// A property name without `:` after it.
        case missingColon
        /// A class name that is not one of the six.
        case unknownClass
        /// Something other than a class name or `[` where a class was expected.
        case expectedClass
        /// A `,` with nothing after it.
        case missingClassAfterComma
        /// Something other than `,` or `;` after a class.
        case unexpectedAfterClass
        /// Not a plain decimal number where one was expected.
        case notAnInteger
        /// `[` without its `]`.
        case unterminatedClass
        /// A `-` that is not the first character of `[…]`: skipped.
        case misplacedHyphen
        /// A character other than space, `,` or `;` straight after a `[…]`.
        case unexpectedAfterBracket
        /// Something other than a property name where one was expected: the rest is ignored.
        case expectedProperty
        /// Something other than `;` after a property: the whole descriptor is ignored.
        case expectedSemicolon
    }

    public let code: Code
    /// The byte offset in the descriptor's UTF-8 where the problem was found.
    public let offset: Int

    public var description: String {
        let what =
            switch code {
            case .unknownProperty: "unknown property name"
            case .missingColon: "expected ':' after the property name"
            case .unknownClass: "unknown character class name"
            case .expectedClass: "expected a character class name or '['"
            case .missingClassAfterComma: "expected a character class after ','"
            case .unexpectedAfterClass: "expected ',' or ';' after a character class"
            case .notAnInteger: "expected a whole number"
            case .unterminatedClass: "'[' without ']'"
            case .misplacedHyphen: "'-' is allowed only first in '[…]'; ignored"
            case .unexpectedAfterBracket: "a literal ']' must be written ']]' at the end of '[…]'"
            case .expectedProperty: "expected a property name; the rest is ignored"
            case .expectedSemicolon: "expected ';' between properties; the whole descriptor is ignored"
            }
        return "\(what) (at byte \(offset))"
    }

    /// Whether the reference parser changes what it keeps because of this problem (every code but
    /// `misplacedHyphen`, which only skips the `-`).
    public var dropsSomething: Bool { code != .misplacedHyphen && code != .unexpectedAfterBracket }
}

/// The reference parser's first half (`_parsePasswordRulesInternal` and the functions it calls): properties as
/// written, before they are combined. Works on UTF-8 bytes: every decision the reference makes looks at ASCII
/// characters only, and a non-ASCII character is never one of them in UTF-16 or UTF-8 alike.
struct PasswordRulesParser {
    enum Property {
        case required([PasswordCharacterClass])
        case allowed([PasswordCharacterClass])
        case maxConsecutive(Int)
        case minLength(Int)
        case maxLength(Int)
    }

    private let input: [UInt8]
    private(set) var diagnostics: [PasswordRulesDiagnostic] = []

    init(_ input: [UInt8]) { self.input = input }

    private static let colon = UInt8(ascii: ":")
    private static let semicolon = UInt8(ascii: ";")
    private static let comma = UInt8(ascii: ",")
    private static let open = UInt8(ascii: "[")
    private static let close = UInt8(ascii: "]")
    private static let hyphen = UInt8(ascii: "-")

    private static func isIdentifierCharacter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || byte == hyphen
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0C || byte == 0x0A || byte == 0x0D || byte == 0x09
    }

    private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

    private mutating func report(_ code: PasswordRulesDiagnostic.Code, _ offset: Int) {
        diagnostics.append(PasswordRulesDiagnostic(code: code, offset: offset))
    }

    private func skippingWhitespace(from position: Int) -> Int {
        var position = position
        while position < input.count && Self.isWhitespace(input[position]) { position += 1 }
        return position
    }

    private func identifier(at start: Int) -> (String, Int) {
        var end = start
        while end < input.count && Self.isIdentifierCharacter(input[end]) { end += 1 }
        return (String(decoding: input[start..<end], as: UTF8.self), end)
    }

    /// Every property kept, or nil when the reference gives up on the whole descriptor.
    mutating func parseProperties() -> [Property]? {
        var properties: [Property] = []
        var position = skippingWhitespace(from: 0)
        while position < input.count {
            guard Self.isIdentifierCharacter(input[position]) else {
                report(.expectedProperty, position)
                return properties
            }
            let property: Property?
            (property, position) = parseProperty(at: position)
            if let property { properties.append(property) }
            position = skippingWhitespace(from: position)
            if position >= input.count { break }
            guard input[position] == Self.semicolon else {
                report(.expectedSemicolon, position)
                return nil
            }
            position = skippingWhitespace(from: position + 1)
        }
        return properties
    }

    /// One property, or nil when it is empty or malformed; and where parsing goes on.
    private mutating func parseProperty(at start: Int) -> (Property?, Int) {
        let (name, afterName) = identifier(at: start)
        guard ["required", "allowed", "max-consecutive", "minlength", "maxlength"].contains(name) else {
            report(.unknownProperty, start)
            return (nil, start)
        }
        guard afterName < input.count, input[afterName] == Self.colon else {
            report(.missingColon, afterName)
            return (nil, afterName)
        }
        let position = skippingWhitespace(from: afterName + 1)
        if position >= input.count || input[position] == Self.semicolon { return (nil, position) }
        switch name {
        case "required", "allowed":
            let (classes, end) = parseClasses(at: position)
            guard let classes else { return (nil, end) }
            return (name == "required" ? .required(classes) : .allowed(classes), end)
        default:
            let (value, end) = parseInteger(at: position)
            guard let value, value != 0 else { return (nil, end) }
            switch name {
            case "max-consecutive": return (.maxConsecutive(value), end)
            case "minlength": return (.minLength(value), end)
            default: return (.maxLength(value), end)
            }
        }
    }

    /// A comma-separated list of class names and `[…]`, up to `;` or the end.
    private mutating func parseClasses(at start: Int) -> ([PasswordCharacterClass]?, Int) {
        var classes: [PasswordCharacterClass] = []
        var position = start
        while true {
            if Self.isIdentifierCharacter(input[position]) {
                let (name, end) = identifier(at: position)
                guard let named = Self.namedClass(name.lowercased()) else {
                    report(.unknownClass, position)
                    return (nil, position)
                }
                classes.append(named)
                position = end
            } else if input[position] == Self.open {
                let characters: [UInt8]?
                (characters, position) = parseCustomClass(at: position)
                if let characters, !characters.isEmpty { classes.append(.custom(characters)) }
            } else {
                report(.expectedClass, position)
                return (nil, position)
            }
            position = skippingWhitespace(from: position)
            if position >= input.count || input[position] == Self.semicolon { break }
            guard input[position] == Self.comma else {
                report(.unexpectedAfterClass, position)
                return (nil, position)
            }
            position = skippingWhitespace(from: position + 1)
            if position >= input.count {
                report(.missingClassAfterComma, position)
                return (nil, position)
            }
        }
        return (classes, position)
    }

    private static func namedClass(_ name: String) -> PasswordCharacterClass? {
        switch name {
        case "upper": .upper
        case "lower": .lower
        case "digit": .digit
        case "special": .special
        case "ascii-printable": .asciiPrintable
        case "unicode": .unicode
        default: nil
        }
    }

    /// `[…]` at `start`: its characters as written (nil when it runs off the end), and where parsing goes on.
    private mutating func parseCustomClass(at start: Int) -> ([UInt8]?, Int) {
        var position = start + 1
        guard position < input.count else {
            report(.unterminatedClass, position)
            return (nil, position)
        }
        let first = position
        var characters: [UInt8] = []
        repeat {
            let character = input[position]
            position += 1
            if !ASCIIPrintableSet.printable.contains(character) { continue }
            if character == Self.hyphen && position - 1 > first {
                report(.misplacedHyphen, position - 1)
                continue
            }
            characters.append(character)
            if character == Self.close { break }
        } while position < input.count
        // The loop stops after the first `]` (kept so far) or at the end. A `]` followed by another closes the
        // class with a literal `]`; any other `]` only closes it.
        if position < input.count, input[position] == Self.close {
            return (characters, position + 1)
        }
        if position < input.count || input[position - 1] == Self.close {
            characters.removeLast()
            if position < input.count, !Self.isWhitespace(input[position]), input[position] != Self.comma,
                input[position] != Self.semicolon
            {
                report(.unexpectedAfterBracket, position)
            }
            return (characters, position)
        }
        report(.unterminatedClass, position)
        return (nil, position)
    }

    /// Decimal digits running to `;` or the end; saturates at `Int.max` where the reference's doubles lose
    /// precision (both are lengths no generator meets).
    private mutating func parseInteger(at start: Int) -> (Int?, Int) {
        guard Self.isDigit(input[start]) else {
            report(.notAnInteger, start)
            return (nil, start)
        }
        var value = 0
        var position = start
        while position < input.count && Self.isDigit(input[position]) {
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(Int(input[position] - UInt8(ascii: "0")))
            value = overflow1 || overflow2 ? Int.max : sum
            position += 1
        }
        if position >= input.count || input[position] == Self.semicolon { return (value, position) }
        report(.notAnInteger, start)
        return (nil, position)
    }
}
