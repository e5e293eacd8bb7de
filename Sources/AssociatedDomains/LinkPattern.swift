/// A universal-link pattern compiled for matching: `*` matches any run of characters (none included), `?` exactly
/// one, `$(name)` any one of the variable's strings, everything else itself.
///
/// Apple's rules (https://developer.apple.com/documentation/bundleresources/applinks/substitutionvariables-swift.dictionary):
/// variable names are case-sensitive and contain any character but `$`, `(` and `)`; values "can contain the `?`
/// and `*` wildcard characters, but not other substitution variables". The predefined variables are listed in
/// `PredefinedVariables`. A `$(` without a closing `)`, or a name that is neither the file's nor predefined, is an
/// error naming the pattern's JSON path, so that a typo is reported rather than matched literally.
///
/// Matching walks the text once per token, keeping the set of positions reachable so far as a bit set (a
/// Thompson-style simulation, 64 positions a word), so no pattern and URL can take more than about
/// `cost × characters / 64` steps (variables' literal values: `cost × characters`); a pattern whose cost is past
/// `maximumCost`, or a file whose patterns together are past `AppLinks.maximumTotalCost`, is refused when the file
/// is read.
struct LinkPattern: Hashable, Sendable {
    /// A character, compared after case folding when the pattern is case-insensitive.
    enum Token: Hashable, Sendable {
        case scalar(UInt32)
        case any
        case star
        /// One of several strings: the literal ones by length, the ones with wildcards as token lists.
        case choice(Choice)
    }

    struct Choice: Hashable, Sendable {
        var literals: Set<[UInt32]> = []
        var lengths: [Int] = []
        var wildcards: [[Token]] = []

        var cost: Int { lengths.reduce(0, +) + wildcards.reduce(0) { $0 + $1.count } }
    }

    /// The most steps per character of text one pattern may take: a literal character costs 1, a variable the sum
    /// of its values' distinct lengths plus the tokens of its values with wildcards.
    static let maximumCost = 16_384

    let tokens: [Token]
    let text: String
    /// The steps per character of text this pattern takes at most.
    let cost: Int

    init(
        _ pattern: String, variables: VariableTable, caseSensitive: Bool, at path: String,
        variablesAllowed: Bool = true
    ) throws(AssociationFileError) {
        text = pattern
        var tokens: [Token] = []
        var cost = 0
        let scalars = Array(pattern.unicodeScalars)
        var index = 0
        while index < scalars.count {
            let scalar = scalars[index]
            if variablesAllowed, scalar == "$", index + 1 < scalars.count, scalars[index + 1] == "(" {
                guard let close = scalars[(index + 2)...].firstIndex(of: ")") else {
                    throw AssociationFileError(
                        .wrongType, path: path, "\(path): \"$(\" has no closing \")\" in \"\(pattern.printable)\"")
                }
                var name = ""
                name.unicodeScalars.append(contentsOf: scalars[(index + 2)..<close])
                guard let choice = variables.choice(name, caseSensitive: caseSensitive) else {
                    throw AssociationFileError(
                        .wrongType, path: path,
                        "\(path) uses $(\(name.printable)), which is neither in applinks.substitutionVariables "
                            + "nor predefined")
                }
                cost += choice.cost
                tokens.append(.choice(choice))
                index = close + 1
            } else {
                tokens.append(Self.token(scalar, caseSensitive: caseSensitive))
                cost += 1
                index += 1
            }
            guard cost <= Self.maximumCost else {
                throw AssociationFileError(
                    .tooLarge, path: path,
                    "\(path): the pattern expands to more than \(Self.maximumCost) tokens with its variables")
            }
        }
        self.tokens = tokens
        self.cost = cost
    }

    private static func token(_ scalar: Unicode.Scalar, caseSensitive: Bool) -> Token {
        switch scalar {
        case "*": .star
        case "?": .any
        default: .scalar(caseSensitive ? scalar.value : fold(scalar))
        }
    }

    static func choice(_ values: [String], caseSensitive: Bool) -> Choice {
        var choice = Choice()
        for value in values {
            let scalars = value.unicodeScalars
            if scalars.contains(where: { $0 == "*" || $0 == "?" }) {
                choice.wildcards.append(scalars.map { token($0, caseSensitive: caseSensitive) })
            } else {
                choice.literals.insert(scalars.map { caseSensitive ? $0.value : fold($0) })
            }
        }
        choice.lengths = Set(choice.literals.map(\.count)).sorted()
        return choice
    }

    /// Simple case folding: the lower-case form when it is one scalar (Unicode's simple lowercase mapping).
    static func fold(_ scalar: Unicode.Scalar) -> UInt32 {
        let lower = scalar.properties.lowercaseMapping.unicodeScalars
        return lower.count == 1 ? lower.first!.value : scalar.value
    }

    /// The text as this pattern compares it: scalars, folded when `caseSensitive` is false.
    static func subject(_ text: String, caseSensitive: Bool) -> [UInt32] {
        text.unicodeScalars.map { caseSensitive ? $0.value : fold($0) }
    }

    /// Whether the whole of `subject` (from `subject(_:caseSensitive:)` with the same setting) matches.
    func matches(_ subject: [UInt32]) -> Bool { matches(LinkSubject(subject)) }

    /// Whether the whole text matches; the same `LinkSubject` serves many patterns.
    func matches(_ text: LinkSubject) -> Bool {
        var start = PositionSet(count: text.scalars.count + 1)
        start.insert(0)
        return Self.run(tokens, from: start, over: text).contains(text.scalars.count)
    }

    /// The positions reachable after `tokens`, from the positions `start`; 64 positions a machine word.
    private static func run(_ tokens: [Token], from start: PositionSet, over text: LinkSubject) -> PositionSet {
        var states = start
        let count = text.scalars.count
        for token in tokens {
            var next: PositionSet
            switch token {
            case .scalar(let value):
                next = states.intersection(text.positions(of: value)).shiftedUp()
            case .any:
                next = states.shiftedUp()
            case .star:
                next = PositionSet(count: count + 1)
                if let first = states.first { next.insert(from: first) }
            case .choice(let choice):
                next = PositionSet(count: count + 1)
                if !choice.lengths.isEmpty {
                    states.forEach { position in
                        for length in choice.lengths where position + length <= count {
                            if choice.literals.contains(Array(text.scalars[position..<position + length])) {
                                next.insert(position + length)
                            }
                        }
                    }
                }
                for alternative in choice.wildcards { next.formUnion(run(alternative, from: states, over: text)) }
            }
            if next.isEmpty { return next }
            states = next
        }
        return states
    }
}

/// The text a pattern is matched against, with each scalar's positions as a set, made when first asked for.
final class LinkSubject {
    let scalars: [UInt32]
    private var masks: [UInt32: PositionSet] = [:]

    init(_ scalars: [UInt32]) { self.scalars = scalars }

    fileprivate func positions(of scalar: UInt32) -> PositionSet {
        if let mask = masks[scalar] { return mask }
        var mask = PositionSet(count: scalars.count + 1)
        for (position, value) in scalars.enumerated() where value == scalar { mask.insert(position) }
        masks[scalar] = mask
        return mask
    }
}

/// A set of positions `0..<count` as a bit set.
private struct PositionSet {
    private(set) var words: [UInt64]
    let count: Int

    init(count: Int) {
        self.count = count
        words = [UInt64](repeating: 0, count: (count + 63) / 64)
    }

    var isEmpty: Bool { words.allSatisfy { $0 == 0 } }

    var first: Int? {
        for (index, word) in words.enumerated() where word != 0 { return index * 64 + word.trailingZeroBitCount }
        return nil
    }

    func contains(_ position: Int) -> Bool { words[position / 64] & (1 << UInt64(position % 64)) != 0 }

    mutating func insert(_ position: Int) { words[position / 64] |= 1 << UInt64(position % 64) }

    /// Inserts `position` and every position after it.
    mutating func insert(from position: Int) {
        let index = position / 64
        words[index] |= ~0 << UInt64(position % 64)
        for later in (index + 1)..<words.count { words[later] = ~0 }
        trim()
    }

    func intersection(_ other: PositionSet) -> PositionSet {
        var result = self
        for index in words.indices { result.words[index] &= other.words[index] }
        return result
    }

    mutating func formUnion(_ other: PositionSet) {
        for index in words.indices { words[index] |= other.words[index] }
    }

    /// Every position plus one; `count - 1` falls off the end.
    func shiftedUp() -> PositionSet {
        var result = self
        var carry: UInt64 = 0
        for index in words.indices {
            let word = words[index]
            result.words[index] = word << 1 | carry
            carry = word >> 63
        }
        result.trim()
        return result
    }

    /// Clears the bits past `count`.
    private mutating func trim() {
        let extra = words.count * 64 - count
        if extra > 0 { words[words.count - 1] &= ~0 >> UInt64(extra) }
    }

    func forEach(_ body: (Int) -> Void) {
        for (index, word) in words.enumerated() {
            var rest = word
            while rest != 0 {
                body(index * 64 + rest.trailingZeroBitCount)
                rest &= rest - 1
            }
        }
    }
}

/// Substitution variables compiled once per file, in both case settings: the file's own and the predefined ones
/// (a file's variable of the same name wins).
struct VariableTable: Hashable, Sendable {
    private var sensitive: [String: LinkPattern.Choice] = [:]
    private var folded: [String: LinkPattern.Choice] = [:]

    static let none = VariableTable([:])
    private static let predefined = VariableTable(PredefinedVariables.values)

    init(_ variables: [String: [String]]) {
        for (name, values) in variables {
            sensitive[name] = LinkPattern.choice(values, caseSensitive: true)
            folded[name] = LinkPattern.choice(values, caseSensitive: false)
        }
    }

    func choice(_ name: String, caseSensitive: Bool) -> LinkPattern.Choice? {
        if caseSensitive { return sensitive[name] ?? Self.predefined.sensitive[name] }
        return folded[name] ?? Self.predefined.folded[name]
    }
}
