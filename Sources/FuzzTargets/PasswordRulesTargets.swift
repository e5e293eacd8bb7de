import PasswordRules

/// The `passwordrules` descriptor parser and the generator that follows its result.
enum PasswordRulesTargets {
    static let passwordRules: FuzzTarget = FuzzTarget(
        name: "password-rules",
        summary: "a passwordrules descriptor: parsed, printed and parsed back alike; a generated password obeys it",
        seeds: {
            [
                "required: upper; required: digit; allowed: lower; minlength: 12; maxlength: 16",
                "required: lower; required: upper; required: digit; required: [-!@#$%^&*_+=`|(){}[:;\"'<>,.?]];",
                "allowed: upper, lower, digit, [-().&@?'#,/\"+]; max-consecutive: 2",
                "required: [-]]; required: [--]; allowed: [a-]",
                "required: unicode; allowed: ascii-printable; minlength: 0; maxlength: 0",
                "max-consecutive: 3; max-consecutive: 1; minlength: 99999999999999999999",
                "Required: upper", "allowed: upper,,", "required: [abc", "required: [ab]c]; 1foo",
                "allowed: [供应A商B责任C进展]", "required:\tdigit\n;\u{0C}allowed:\rspecial",
            ].map { Array($0.utf8) }
        },
        run: { bytes in
            let descriptor = String(decoding: bytes, as: UTF8.self)
            let (rules, _) = PasswordRules.parse(descriptor)
            expect(!rules.allowed.isEmpty, "no allowed characters")
            let reparsed = PasswordRules.parse(rules.description)
            expect(reparsed.diagnostics.isEmpty, "description has errors: \(rules.description)")
            expect(reparsed.rules == rules, "description parses differently: \(rules.description)")
            if let plan = try? PasswordGenerator.Plan(rules) {
                expect(plan.strength >= PasswordGenerator.minimumStrength, "a plan below the strength floor")
            }
            var random = SplitMix(state: UInt64(bytes.count))
            guard let password = try? PasswordGenerator.generateIgnoringStrength(following: rules, using: &random)
            else { return }
            let characters = Array(password.utf8)
            expect(characters.count >= (rules.minLength ?? 1), "too short")
            expect(characters.count <= (rules.maxLength ?? Int.max), "too long")
            expect(PasswordGenerator.longestRun(characters) <= (rules.maxConsecutive ?? Int.max), "run too long")
            let allowed = PasswordRules(required: [rules.allowed])
            expect(characters.allSatisfy { allowed.permits($0) }, "character not allowed")
            for required in rules.required where !required.isEmpty {
                let set = PasswordRules(required: [required])
                expect(characters.contains { set.permits($0) }, "required class missing")
            }
        }
    )
}

/// SplitMix64, so each input replays exactly.
private struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

extension PasswordRules {
    /// Whether the first required entry's classes hold `character` (`unicode` holds every one).
    fileprivate func permits(_ character: UInt8) -> Bool {
        required[0].contains { characterClass in
            switch characterClass {
            case .upper: (0x41...0x5A).contains(character)
            case .lower: (0x61...0x7A).contains(character)
            case .digit: (0x30...0x39).contains(character)
            case .special:
                (0x20...0x7E).contains(character) && !(0x41...0x5A).contains(character)
                    && !(0x61...0x7A).contains(character) && !(0x30...0x39).contains(character)
            case .asciiPrintable: (0x20...0x7E).contains(character)
            case .unicode: true
            case .custom(let members): members.contains(character)
            }
        }
    }
}
