/// A universal-link pattern compiled for matching: `*` matches any run of characters (none included), `?` exactly
/// one, `$(name)` any one of the variable's strings, everything else itself.
///
/// Apple's rules (https://developer.apple.com/documentation/bundleresources/applinks/substitutionvariables-swift.dictionary):
/// variable names are case-sensitive and contain any character but `$`, `(` and `)`; values "can contain the `?`
/// and `*` wildcard characters, but not other substitution variables". The predefined variables are listed in
/// `PredefinedVariables`. A `$(` without a closing `)`, or a name that is neither the file's nor predefined, is an
/// error naming the pattern's JSON path, so that a typo is reported rather than matched literally.
///
/// Matching walks the text once per token, keeping the set of positions reachable so far (a Thompson-style
/// simulation), so no pattern and URL can take more than `tokens × characters` steps; a file whose patterns
/// would expand past `maximumCost` tokens is refused when it is read.
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
    }

    /// The most steps per character of text one pattern may take: a literal character costs 1, a variable 1 per
    /// distinct literal length plus the tokens of its wildcard values.
    static let maximumCost = 16_384

    let tokens: [Token]
    let text: String

    init(
        _ pattern: String, variables: [String: [String]], caseSensitive: Bool, at path: String,
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
                guard let values = variables[name] ?? PredefinedVariables.values[name] else {
                    throw AssociationFileError(
                        .wrongType, path: path,
                        "\(path) uses $(\(name.printable)), which is neither in applinks.substitutionVariables "
                            + "nor predefined")
                }
                let choice = Self.choice(values, caseSensitive: caseSensitive)
                cost += choice.lengths.count + choice.wildcards.reduce(0) { $0 + $1.count }
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
    }

    private static func token(_ scalar: Unicode.Scalar, caseSensitive: Bool) -> Token {
        switch scalar {
        case "*": .star
        case "?": .any
        default: .scalar(caseSensitive ? scalar.value : fold(scalar))
        }
    }

    private static func choice(_ values: [String], caseSensitive: Bool) -> Choice {
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
    func matches(_ subject: [UInt32]) -> Bool {
        var states = [Bool](repeating: false, count: subject.count + 1)
        states[0] = true
        states = Self.run(tokens, from: states, over: subject)
        return states[subject.count]
    }

    private static func run(_ tokens: [Token], from start: [Bool], over subject: [UInt32]) -> [Bool] {
        var states = start
        let count = subject.count
        for token in tokens {
            var next = [Bool](repeating: false, count: count + 1)
            var any = false
            switch token {
            case .scalar(let value):
                for position in 0..<count where states[position] && subject[position] == value {
                    next[position + 1] = true
                    any = true
                }
            case .any:
                for position in 0..<count where states[position] {
                    next[position + 1] = true
                    any = true
                }
            case .star:
                if let first = states.firstIndex(of: true) {
                    for position in first...count { next[position] = true }
                    any = true
                }
            case .choice(let choice):
                for position in 0...count where states[position] {
                    for length in choice.lengths where position + length <= count {
                        if choice.literals.contains(Array(subject[position..<position + length])) {
                            next[position + length] = true
                            any = true
                        }
                    }
                }
                for alternative in choice.wildcards {
                    let reached = run(alternative, from: states, over: subject)
                    for position in 0...count where reached[position] {
                        next[position] = true
                        any = true
                    }
                }
            }
            guard any else { return next }
            states = next
        }
        return states
    }
}
