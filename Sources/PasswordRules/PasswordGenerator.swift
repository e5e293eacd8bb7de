import Basics
import Foundation

/// Safari's generated password formats.
public enum PasswordFormat: String, CaseIterable, Sendable {
    /// `xxx-xxx-xxx-xxx`, as in `uFA-T9C-aRD-cDP` (Safari before iOS 12 and macOS Mojave).
    case classic
    /// Twenty characters in three syllable groups, as in `hupvEw-fodne1-qabjyg` (iOS 12 and later).
    case strong
}

/// Why no password could be made for a set of rules.
public struct PasswordGenerationError: CodedError {
    public enum Code: String, Hashable, Sendable {
        /// `minlength` is above `maxlength`.
        case contradictoryLengths
        /// The password would be longer than ``PasswordGenerator/longestPassword``.
        case tooLong
        /// More required classes than `maxlength` characters.
        case tooManyRequiredClasses
        /// `max-consecutive` cannot be kept with the characters allowed, or was not kept in
        /// ``PasswordGenerator/maximumAttempts`` tries.
        case maxConsecutiveUnsatisfiable
        /// The rules leave less randomness than ``PasswordGenerator/minimumStrength`` bits.
        case tooWeak
    }

    public let code: Code
    public let description: String

    public init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }
}

/// Generated passwords. Randomness comes in as a generator: the CLI passes `SystemRandomNumberGenerator` (the
/// system CSPRNG, getrandom(2) on Linux), tests a seeded one. Every draw is `Int.random(in:using:)`, which is
/// unbiased (Lemire's multiply-and-reject, no modulo), and shuffles are the standard library's Fisher–Yates
/// `shuffle(using:)` over the same draws.
public enum PasswordGenerator {
    /// The longest password ``generate(following:using:)`` makes.
    public static let longestPassword = 4096
    /// How many times ``generate(following:using:)`` starts again before it gives up on `max-consecutive`.
    public static let maximumAttempts = 1000
    /// The length ``generate(following:using:)`` aims for when the rules allow it: the strong format's.
    public static let preferredLength = 20
    /// The least randomness, in bits, a password made by rules may have: below 40 bits KeePassXC and KeePassium
    /// rate a password "very weak" (their next step, "weak", ends at 75). Rules that allow only less (`allowed:
    /// [a]`, eight digits) are refused with ``PasswordGenerationError/Code/tooWeak`` rather than followed: the
    /// person then chooses the password, knowing the site's rules are the reason.
    public static let minimumStrength = 40.0

    // MARK: Classic

    /// The classic format's three sets, from Apple's documentation of `SecCreateSharedWebCredentialPassword()`:
    /// "A password in the form xxx-xxx-xxx-xxx, where x is taken from the sets abcdefghkmnopqrstuvwxy,
    /// ABCDEFGHJKLMNPQRSTUVWXYZ, and 3456789, with at least one character from each set being present."
    /// (No i, j, l, z, I, O, 0, 1 or 2: the look-alikes.)
    public static let classicSets: [[UInt8]] = [
        Array("abcdefghkmnopqrstuvwxy".utf8), Array("ABCDEFGHJKLMNPQRSTUVWXYZ".utf8), Array("3456789".utf8),
    ]

    /// A classic password: twelve characters drawn uniformly from the 53 of ``classicSets``, drawn again until
    /// every set is present, so each of the allowed strings is equally likely. About 80% of draws pass.
    public static func classic(using random: inout some RandomNumberGenerator) -> String {
        let alphabet = classicAlphabet
        var characters = [UInt8](repeating: 0, count: 12)
        while true {
            var setsSeen = 0
            for index in 0..<12 {
                let draw = Int.random(in: 0..<alphabet.count, using: &random)
                characters[index] = alphabet[draw]
                setsSeen |= draw < classicSets[0].count ? 1 : draw < classicSets[0].count + classicSets[1].count ? 2 : 4
            }
            guard setsSeen == 7 else { continue }
            return String(unsafeUninitializedCapacity: 15) { text in
                var written = 0
                for (index, character) in characters.enumerated() {
                    if index > 0 && index % 3 == 0 {
                        text[written] = UInt8(ascii: "-")
                        written += 1
                    }
                    text[written] = character
                    written += 1
                }
                return written
            }
        }
    }

    /// The three sets one after the other.
    static let classicAlphabet = classicSets.flatMap { $0 }

    // MARK: Strong

    /// The strong format's letters. Apple says only that there are 19 consonants and 6 vowels (Ricky Mondello,
    /// "How iOS Encourages Healthy Password Practices", 2018, and rmondello.com, October 2024); these are the 20
    /// consonants without the look-alike `l`, and the vowels with `y`, which fit the published example
    /// `hupvEw-fodne1-qabjyg`.
    public static let consonants = Array("bcdfghjkmnpqrstvwxz".utf8)
    public static let vowels = Array("aeiouy".utf8)

    /// A strong password: three groups of consonant, vowel, consonant, consonant, vowel, consonant joined by
    /// hyphens (20 characters). Then one of the six characters at the start or end of a group becomes a digit
    /// (as in the example, whose `1` ends the middle group; our choice where Apple publishes no rule), and one of
    /// the 17 remaining letters becomes upper case. Each choice is uniform: about 72 bits, Apple quotes 71 after
    /// its filter of offensive substrings, which this generator does not have.
    public static func strong(using random: inout some RandomNumberGenerator) -> String {
        let consonants = consonants
        let vowels = vowels
        var letters = [UInt8](repeating: 0, count: 18)
        for index in 0..<18 {
            // Each group is consonant, vowel, consonant, consonant, vowel, consonant.
            let set = index % 6 == 1 || index % 6 == 4 ? vowels : consonants
            letters[index] = set[Int.random(in: 0..<set.count, using: &random)]
        }
        let edges = [0, 5, 6, 11, 12, 17]
        let digitIndex = edges[Int.random(in: 0..<edges.count, using: &random)]
        letters[digitIndex] = UInt8(ascii: "0") + UInt8(Int.random(in: 0..<10, using: &random))
        // One of the 17 other letters, uniformly: a draw in 0..<17, skipping the digit's place.
        var upperIndex = Int.random(in: 0..<17, using: &random)
        if upperIndex >= digitIndex { upperIndex += 1 }
        letters[upperIndex] -= 0x20
        letters.insert(UInt8(ascii: "-"), at: 12)
        letters.insert(UInt8(ascii: "-"), at: 6)
        return String(decoding: letters, as: UTF8.self)
    }

    // MARK: Rules

    /// The length ``generate(following:using:)`` uses: ``preferredLength``, or at least as many characters as
    /// there are required classes, moved into `minlength…maxlength`.
    public static func length(for rules: PasswordRules) throws(PasswordGenerationError) -> Int {
        let requiredCount = requiredSets(rules).count
        let lower = rules.minLength ?? 1
        let upper = rules.maxLength ?? Int.max
        guard lower <= upper else {
            throw PasswordGenerationError(
                .contradictoryLengths, "minlength \(lower) is greater than maxlength \(upper)")
        }
        let length = min(max(preferredLength, requiredCount, lower), upper)
        guard length <= longestPassword else {
            throw PasswordGenerationError(
                .tooLong, "a password of \(length) characters is longer than \(longestPassword)")
        }
        guard requiredCount <= length else {
            throw PasswordGenerationError(
                .tooManyRequiredClasses, "\(requiredCount) required classes do not fit in \(length) characters")
        }
        return length
    }

    /// A password following `rules`. Each required set gets one position, chosen uniformly (a shuffle of the
    /// slots), and every other position takes the allowed characters; then, left to right, each position draws
    /// uniformly from its set, less the previous character when that one already ends a run of `max-consecutive`.
    /// Without `max-consecutive` this is one uniform character from each required set and the rest uniform from
    /// the allowed ones, in a uniformly random order. A position left with no character (a required set of one
    /// character right after a full run of it) starts the password again, at most ``maximumAttempts`` times.
    /// `unicode` is read as ASCII printable, all of which it includes.
    ///
    /// A required set that includes another is left out, since a character of the smaller one satisfies both.
    /// A required entry with no characters (`required: []`) asks for nothing.
    public static func generate(
        following rules: PasswordRules, using random: inout some RandomNumberGenerator
    ) throws(PasswordGenerationError) -> String {
        try generate(following: Plan(rules), using: &random)
    }

    /// ``generate(following:using:)`` without the strength floor: for the tests of the mechanics and the fuzz
    /// target, which try rules no person should get a password from.
    public static func generateIgnoringStrength(
        following rules: PasswordRules, using random: inout some RandomNumberGenerator
    ) throws(PasswordGenerationError) -> String {
        try generate(following: Plan(rules, minimumStrength: 0), using: &random)
    }

    /// What ``generate(following:using:)`` works out from the rules before drawing: make it once for many passwords.
    public struct Plan: Sendable {
        let length: Int
        let allowed: [UInt8]
        let required: [[UInt8]]
        let limit: Int

        /// The plan for `rules`, refused when its passwords would have less than `minimumStrength` bits
        /// (``strength``); tests of the mechanics pass 0.
        public init(
            _ rules: PasswordRules, minimumStrength: Double = PasswordGenerator.minimumStrength
        ) throws(PasswordGenerationError) {
            length = try PasswordGenerator.length(for: rules)
            allowed = ASCIIPrintableSet(rules.allowed).characters
            required = requiredSets(rules).map { $0.characters }
            limit = rules.maxConsecutive ?? Int.max
            if limit < length, allowed.count == 1 {
                throw PasswordGenerationError(
                    .maxConsecutiveUnsatisfiable,
                    "only one character is allowed, and it may not repeat more than \(limit) times in a row")
            }
            guard strength >= minimumStrength else {
                let bits = Int(strength.rounded(.down))
                throw PasswordGenerationError(
                    .tooWeak,
                    "a password of \(length) characters from \(allowed.count) allowed has at most \(bits) bits of "
                        + "randomness, below the \(Int(minimumStrength)) a generated password needs")
            }
        }

        /// A lower bound of the randomness in bits of one password: each required slot's set and every other
        /// slot's allowed characters, less one character a slot after the first when `max-consecutive` may forbid
        /// the previous one. The random order of the slots adds more, which is not counted.
        public var strength: Double {
            let constrained = limit < length
            var bits = 0.0
            for slot in 0..<length {
                let size = slot < required.count ? required[slot].count : allowed.count
                let usable = constrained && slot > 0 ? size - 1 : size
                bits += log2(Double(max(usable, 1)))
            }
            return bits
        }
    }

    /// A password following the rules `plan` was made from.
    public static func generate(
        following plan: Plan, using random: inout some RandomNumberGenerator
    ) throws(PasswordGenerationError) -> String {
        let (length, allowed, required, limit) = (plan.length, plan.allowed, plan.required, plan.limit)
        // A slot is the index of its required set, or -1 for the allowed characters.
        var slots = [Int](repeating: -1, count: length)
        for index in required.indices { slots[index] = index }
        var characters = [UInt8](repeating: 0, count: length)
        attempts: for _ in 0..<maximumAttempts {
            slots.shuffle(using: &random)
            var run = 0
            for (position, slot) in slots.enumerated() {
                let set = slot < 0 ? allowed : required[slot]
                // The previous character, when it ends a full run: drawn around, so the rest stay uniform.
                let forbidden = run >= limit ? set.firstIndex(of: characters[position - 1]) : nil
                let count = set.count - (forbidden == nil ? 0 : 1)
                guard count > 0 else { continue attempts }
                var draw = Int.random(in: 0..<count, using: &random)
                if let forbidden, draw >= forbidden { draw += 1 }
                let character = set[draw]
                run = position > 0 && character == characters[position - 1] ? run + 1 : 1
                characters[position] = character
            }
            return String(decoding: characters, as: UTF8.self)
        }
        throw PasswordGenerationError(
            .maxConsecutiveUnsatisfiable,
            "no password of \(length) characters kept max-consecutive \(limit) in \(maximumAttempts) tries")
    }

    /// The required sets, within the allowed characters, without empty ones and without any that includes another.
    static func requiredSets(_ rules: PasswordRules) -> [ASCIIPrintableSet] {
        let allowed = ASCIIPrintableSet(rules.allowed)
        var sets: [ASCIIPrintableSet] = []
        for classes in rules.required {
            var set = ASCIIPrintableSet()
            for character in ASCIIPrintableSet(classes).characters where allowed.contains(character) {
                set.insert(character)
            }
            if !set.isEmpty && !sets.contains(set) { sets.append(set) }
        }
        return sets.filter { set in !sets.contains { other in other != set && other.isSubset(of: set) } }
    }

    /// The length of the longest run of one character.
    public static func longestRun(_ characters: some Collection<UInt8>) -> Int {
        var longest = 0
        var run = 0
        var previous: UInt8?
        for character in characters {
            run = character == previous ? run + 1 : 1
            previous = character
            longest = max(longest, run)
        }
        return longest
    }
}

extension ASCIIPrintableSet {
    func isSubset(of other: ASCIIPrintableSet) -> Bool {
        bits.low & ~other.bits.low == 0 && bits.high & ~other.bits.high == 0
    }
}
