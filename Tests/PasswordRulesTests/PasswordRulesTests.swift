import PasswordRules
import Testing
import TestSupport

/// Descriptors and what Apple's reference parser gives for them, as `JSON.stringify(parsePasswordRules(d))`.
/// The expectations were produced by running apple/password-manager-resources tools/PasswordRulesParser.js (commit
/// a1b610f) under Node on each descriptor; a third of the rows are also cases of that repository's own
/// PasswordRulesParser.test.js. The data is copied, the parser is not. `minlength: 99999999999999999999` is left
/// out: the reference keeps it as the double 1e20, this parser saturates at `Int.max` (tested below).
let referenceTable: [(String, String)] = [
    ("", #"[{"_name":"allowed","value":[{"_name":"ascii-printable"}]}]"#),
    ("   ", #"[{"_name":"allowed","value":[{"_name":"ascii-printable"}]}]"#),
    (
        "required: upper",
        #"[{"_name":"required","value":[{"_name":"upper"}]},{"_name":"allowed","value":[{"_name":"upper"}]}]"#
    ),
    (
        "required: upper;",
        #"[{"_name":"required","value":[{"_name":"upper"}]},{"_name":"allowed","value":[{"_name":"upper"}]}]"#
    ),
    (
        "required: uPPeR",
        #"[{"_name":"required","value":[{"_name":"upper"}]},{"_name":"allowed","value":[{"_name":"upper"}]}]"#
    ),
    (
        "required:upper",
        #"[{"_name":"required","value":[{"_name":"upper"}]},{"_name":"allowed","value":[{"_name":"upper"}]}]"#
    ),
    ("allowed:upper", #"[{"_name":"allowed","value":[{"_name":"upper"}]}]"#),
    (
        "required: upper, [AZ];",
        #"[{"_name":"required","value":[{"_name":"upper"}]},{"_name":"allowed","value":[{"_name":"upper"}]}]"#
    ),
    (
        "required: upper; allowed: upper; allowed: lower",
        #"[{"_name":"required","value":[{"_name":"upper"}]},{"_name":"allowed","value":[{"_name":"upper"},{"_name":"lower"}]}]"#
    ),
    (
        "max-consecutive: 5; max-consecutive: 3",
        #"[{"_name":"allowed","value":[{"_name":"ascii-printable"}]},{"_name":"max-consecutive","value":3}]"#
    ),
    (
        "max-consecutive: 3; max-consecutive: 1; max-consecutive: 5",
        #"[{"_name":"allowed","value":[{"_name":"ascii-printable"}]},{"_name":"max-consecutive","value":1}]"#
    ),
    (
        "required: [*&^ABC]; allowed: upper",
        #"[{"_name":"required","value":[{"_characters":["A","B","C","&","*","^"]}]},{"_name":"allowed","value":[{"_name":"upper"},{"_characters":["&","*","^"]}]}]"#
    ),
    (
        "required: unicode; required: digit",
        #"[{"_name":"required","value":[{"_name":"unicode"}]},{"_name":"required","value":[{"_name":"digit"}]},{"_name":"allowed","value":[{"_name":"unicode"}]}]"#
    ),
    (
        "allowed: ascii-printable; required: unicode",
        #"[{"_name":"required","value":[{"_name":"unicode"}]},{"_name":"allowed","value":[{"_name":"ascii-printable"}]}]"#
    ),
    (
        "required: ascii-printable, unicode",
        #"[{"_name":"required","value":[{"_name":"ascii-printable"}]},{"_name":"allowed","value":[{"_name":"ascii-printable"}]}]"#
    ),
    (
        "required: ; required: upper",
        #"[{"_name":"required","value":[{"_name":"upper"}]},{"_name":"allowed","value":[{"_name":"upper"}]}]"#
    ),
    (
        "allowed: [\u{4f9b}\u{5e94}A\u{5546}B\u{8d23}\u{4efb}C\u{8fdb}\u{5c55}]",
        #"[{"_name":"allowed","value":[{"_characters":["A","B","C"]}]}]"#
    ),
    (
        "allowed: [\u{4f9b}\u{5e94}\u{5546}\u{8d23}\u{4efb}\u{8fdb}\u{5c55}]",
        #"[{"_name":"allowed","value":[{"_name":"ascii-printable"}]}]"#
    ),
    (
        "required: upper; allowed: upper; allowed: lower; maxlength: 73; minlength: 12;",
        #"[{"_name":"required","value":[{"_name":"upper"}]},{"_name":"allowed","value":[{"_name":"upper"},{"_name":"lower"}]},{"_name":"minlength","value":12},{"_name":"maxlength","value":73}]"#
    ),
    (
        "minlength: 12; maxlength: 17; minlength: 10",
        #"[{"_name":"allowed","value":[{"_name":"ascii-printable"}]},{"_name":"minlength","value":12},{"_name":"maxlength","value":17}]"#
    ),
    (
        "maxlength: 20; maxlength: 8; maxlength: 30",
        #"[{"_name":"allowed","value":[{"_name":"ascii-printable"}]},{"_name":"maxlength","value":8}]"#
    ),
    ("minlength: 0", #"[{"_name":"allowed","value":[{"_name":"ascii-printable"}]}]"#),
    ("maxlength: 0", #"[{"_name":"allowed","value":[{"_name":"ascii-printable"}]}]"#),
    ("max-consecutive: 0", #"[{"_name":"allowed","value":[{"_name":"ascii-printable"}]}]"#),
    ("allowed: upper,,", #"[{"_name":"allowed","value":[{"_name":"ascii-printable"}]}]"#),
    ("allowed: upper,;", #"[{"_name":"allowed","value":[{"_name":"ascii-printable"}]}]"#),
    ("allowed: upper [a]", #"[{"_name":"allowed","value":[{"_name":"ascii-printable"}]}]"#),
    ("dummy: upper", #"[{"_name":"allowed","value":[{"_name":"ascii-printable"}]}]"#),
    ("Required: upper", #"[{"_name":"allowed","value":[{"_name":"ascii-printable"}]}]"#),
    ("upper: lower", #"[{"_name":"allowed","value":[{"_name":"ascii-printable"}]}]"#),
    ("max-consecutive: [ABC]", #"[{"_name":"allowed","value":[{"_name":"ascii-printable"}]}]"#),
    ("max-consecutive: 1+1", #"[{"_name":"allowed","value":[{"_name":"ascii-printable"}]}]"#),
    ("required: 1", #"[{"_name":"allowed","value":[{"_name":"ascii-printable"}]}]"#),
    ("required: A", #"[{"_name":"allowed","value":[{"_name":"ascii-printable"}]}]"#),
    ("required: required: upper", #"[{"_name":"allowed","value":[{"_name":"ascii-printable"}]}]"#),
    ("required upper", #"[{"_name":"allowed","value":[{"_name":"ascii-printable"}]}]"#),
    ("required", #"[{"_name":"allowed","value":[{"_name":"ascii-printable"}]}]"#),
    ("required: digit; required: []-];", #"[{"_name":"allowed","value":[{"_name":"ascii-printable"}]}]"#),
    (
        "required: digit; required: [--];",
        #"[{"_name":"required","value":[{"_name":"digit"}]},{"_name":"required","value":[{"_characters":["-"]}]},{"_name":"allowed","value":[{"_name":"digit"},{"_characters":["-"]}]}]"#
    ),
    (
        "required: digit; required: [-]];",
        #"[{"_name":"required","value":[{"_name":"digit"}]},{"_name":"required","value":[{"_characters":["-","]"]}]},{"_name":"allowed","value":[{"_name":"digit"},{"_characters":["-","]"]}]}]"#
    ),
    (
        "required: digit; required: [-a--------];",
        #"[{"_name":"required","value":[{"_name":"digit"}]},{"_name":"required","value":[{"_characters":["a","-"]}]},{"_name":"allowed","value":[{"_name":"digit"},{"_characters":["a","-"]}]}]"#
    ),
    ("required: digit; required: [-a--------] ];", #"[{"_name":"allowed","value":[{"_name":"ascii-printable"}]}]"#),
    (
        "required: [abcdefghijklmnopqrstuvwxyz]",
        #"[{"_name":"required","value":[{"_name":"lower"}]},{"_name":"allowed","value":[{"_name":"lower"}]}]"#
    ),
    (
        "required: [abcdefghijklmnopqrstuvwxy]",
        #"[{"_name":"required","value":[{"_characters":["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q","r","s","t","u","v","w","x","y"]}]},{"_name":"allowed","value":[{"_characters":["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q","r","s","t","u","v","w","x","y"]}]}]"#
    ),
    (
        "required: lower, upper, digit;",
        #"[{"_name":"required","value":[{"_name":"upper"},{"_name":"lower"},{"_name":"digit"}]},{"_name":"allowed","value":[{"_name":"upper"},{"_name":"lower"},{"_name":"digit"}]}]"#
    ),
    (
        "required: lower, [@#$];",
        ##"[{"_name":"required","value":[{"_name":"lower"},{"_characters":["#","$","@"]}]},{"_name":"allowed","value":[{"_name":"lower"},{"_characters":["#","$","@"]}]}]"##
    ),
    ("required: []", #"[{"_name":"required","value":[]},{"_name":"allowed","value":[{"_name":"ascii-printable"}]}]"#),
    ("allowed: []", #"[{"_name":"allowed","value":[{"_name":"ascii-printable"}]}]"#),
    (
        "required: [ ]",
        #"[{"_name":"required","value":[{"_characters":[" "]}]},{"_name":"allowed","value":[{"_characters":[" "]}]}]"#
    ),
    (
        "required: [a]]",
        #"[{"_name":"required","value":[{"_characters":["a","]"]}]},{"_name":"allowed","value":[{"_characters":["a","]"]}]}]"#
    ),
    (
        "required: []]",
        #"[{"_name":"required","value":[{"_characters":["]"]}]},{"_name":"allowed","value":[{"_characters":["]"]}]}]"#
    ),
    ("required: [ab]]]", #"[{"_name":"allowed","value":[{"_name":"ascii-printable"}]}]"#),
    ("required: [abc", #"[{"_name":"required","value":[]},{"_name":"allowed","value":[{"_name":"ascii-printable"}]}]"#),
    (
        "required: upper, [abc",
        #"[{"_name":"required","value":[{"_name":"upper"}]},{"_name":"allowed","value":[{"_name":"upper"}]}]"#
    ),
    (
        "minlength: 5; required: upper,",
        #"[{"_name":"allowed","value":[{"_name":"ascii-printable"}]},{"_name":"minlength","value":5}]"#
    ),
    (
        "minlength: 12 ; required: upper",
        #"[{"_name":"required","value":[{"_name":"upper"}]},{"_name":"allowed","value":[{"_name":"upper"}]}]"#
    ),
    ("minlength: 12abc; required: upper", #"[{"_name":"allowed","value":[{"_name":"ascii-printable"}]}]"#),
    ("minlength: 12 ", #"[{"_name":"allowed","value":[{"_name":"ascii-printable"}]}]"#),
    (
        "required: upper; 1foo",
        #"[{"_name":"required","value":[{"_name":"upper"}]},{"_name":"allowed","value":[{"_name":"upper"}]}]"#
    ),
    (
        "required: upper; ; allowed: digit",
        #"[{"_name":"required","value":[{"_name":"upper"}]},{"_name":"allowed","value":[{"_name":"upper"}]}]"#
    ),
    (";required: upper", #"[{"_name":"allowed","value":[{"_name":"ascii-printable"}]}]"#),
    (
        "required: upper\t;\nallowed:\u{c}digit\r",
        #"[{"_name":"required","value":[{"_name":"upper"}]},{"_name":"allowed","value":[{"_name":"upper"},{"_name":"digit"}]}]"#
    ),
    ("required: upper lower", #"[{"_name":"allowed","value":[{"_name":"ascii-printable"}]}]"#),
    (
        "required: special",
        #"[{"_name":"required","value":[{"_name":"special"}]},{"_name":"allowed","value":[{"_name":"special"}]}]"#
    ),
    ("allowed: [ !\"#$%&'()*+,./:;<=>?@[\\^_`{|}~]], [-]", #"[{"_name":"allowed","value":[{"_name":"special"}]}]"#),
    (
        "required: upper, lower, digit, special",
        #"[{"_name":"required","value":[{"_name":"ascii-printable"}]},{"_name":"allowed","value":[{"_name":"ascii-printable"}]}]"#
    ),
    (
        "allowed: upper, lower, digit, [-().&@?'#,/\"+]; max-consecutive: 2",
        ##"[{"_name":"allowed","value":[{"_name":"upper"},{"_name":"lower"},{"_name":"digit"},{"_characters":["\"","#","&","'","(",")","+",",","-",".","/","?","@"]}]},{"_name":"max-consecutive","value":2}]"##
    ),
    (
        "required: lower; required: upper; required: digit; required: [-!@#$%^&*_+=`|(){}[:;\"'<>,.?]]; minlength: 8; maxlength: 16;",
        ##"[{"_name":"required","value":[{"_name":"lower"}]},{"_name":"required","value":[{"_name":"upper"}]},{"_name":"required","value":[{"_name":"digit"}]},{"_name":"required","value":[{"_characters":["!","\"","#","$","%","&","'","(",")","*","+",",","-",".",":",";","<","=",">","?","@","[","]","^","_","`","{","|","}"]}]},{"_name":"allowed","value":[{"_name":"upper"},{"_name":"lower"},{"_name":"digit"},{"_characters":["!","\"","#","$","%","&","'","(",")","*","+",",","-",".",":",";","<","=",">","?","@","[","]","^","_","`","{","|","}"]}]},{"_name":"minlength","value":8},{"_name":"maxlength","value":16}]"##
    ),
    (
        "required: [\u{1}a\u{7f}b]",
        #"[{"_name":"required","value":[{"_characters":["a","b"]}]},{"_name":"allowed","value":[{"_characters":["a","b"]}]}]"#
    ),
    ("allowed: [a\u{e9}-b]", #"[{"_name":"allowed","value":[{"_characters":["a","b"]}]}]"#),
    (
        "required: upper; required: upper; allowed: lower",
        #"[{"_name":"required","value":[{"_name":"upper"}]},{"_name":"required","value":[{"_name":"upper"}]},{"_name":"allowed","value":[{"_name":"upper"},{"_name":"lower"}]}]"#
    ),
    (
        "required: lower; allowed: unicode, digit",
        #"[{"_name":"required","value":[{"_name":"lower"}]},{"_name":"allowed","value":[{"_name":"unicode"}]}]"#
    ),
    (
        "max-consecutive: 2; minlength: 4; maxlength: 4; allowed: [ab]",
        #"[{"_name":"allowed","value":[{"_characters":["a","b"]}]},{"_name":"max-consecutive","value":2},{"_name":"minlength","value":4},{"_name":"maxlength","value":4}]"#
    ),
    (
        "required: [A-Z]",
        #"[{"_name":"required","value":[{"_characters":["A","Z"]}]},{"_name":"allowed","value":[{"_characters":["A","Z"]}]}]"#
    ),
]

/// The rules in the reference's JSON shape: `_name` and `value` per property, `_name` per named class,
/// `_characters` per custom class.
func referenceJSON(_ rules: PasswordRules) -> String {
    func quoted(_ character: UInt8) -> String {
        switch character {
        case UInt8(ascii: "\""): #""\"""#
        case UInt8(ascii: "\\"): #""\\""#
        default: "\"" + String(UnicodeScalar(character)) + "\""
        }
    }
    func classes(_ classes: [PasswordCharacterClass]) -> String {
        "["
            + classes.map { characterClass in
                if case .custom(let characters) = characterClass {
                    return #"{"_characters":["# + characters.map(quoted).joined(separator: ",") + "]}"
                }
                return #"{"_name":""# + characterClass.descriptor + #""}"#
            }.joined(separator: ",") + "]"
    }
    var properties = rules.required.map { #"{"_name":"required","value":"# + classes($0) + "}" }
    properties.append(#"{"_name":"allowed","value":"# + classes(rules.allowed) + "}")
    if let value = rules.maxConsecutive { properties.append(#"{"_name":"max-consecutive","value":\#(value)}"#) }
    if let value = rules.minLength { properties.append(#"{"_name":"minlength","value":\#(value)}"#) }
    if let value = rules.maxLength { properties.append(#"{"_name":"maxlength","value":\#(value)}"#) }
    return "[" + properties.joined(separator: ",") + "]"
}

@Suite struct PasswordRulesTests {
    @Test(arguments: referenceTable)
    func parsesAsTheReferenceDoes(descriptor: String, expected: String) {
        #expect(referenceJSON(PasswordRules(parsing: descriptor)) == expected, "\(descriptor)")
    }

    @Test func tableIsLargeAndCoversMalformedInput() {
        #expect(referenceTable.count >= 30)
        let malformed = referenceTable.filter { !PasswordRules.parse($0.0).diagnostics.isEmpty }
        #expect(malformed.count >= 20)
    }

    @Test(arguments: [
        ("dummy: upper", PasswordRulesDiagnostic.Code.unknownProperty),
        ("required upper", .missingColon),
        ("required: blue", .unknownClass),
        ("required: 1", .expectedClass),
        ("allowed: upper,", .missingClassAfterComma),
        ("allowed: upper [a]", .unexpectedAfterClass),
        ("minlength: 1+1", .notAnInteger),
        ("required: [abc", .unterminatedClass),
        ("required: [a-z]", .misplacedHyphen),
        ("required: [ab]c]", .unexpectedAfterBracket),
        ("required: upper; 1", .expectedProperty),
        ("minlength: 5 maxlength: 6", .notAnInteger),
    ])
    func reportsTheFirstProblem(descriptor: String, code: PasswordRulesDiagnostic.Code) {
        #expect(PasswordRules.parse(descriptor).diagnostics.first?.code == code)
    }

    @Test func hugeNumbersSaturate() {
        let rules = PasswordRules(parsing: "minlength: 99999999999999999999999; maxlength: 5")
        #expect(rules.minLength == Int.max)
        #expect(throws: PasswordGenerationError(.contradictoryLengths, "")) {
            try PasswordGenerator.length(for: rules)
        }
    }

    @Test(arguments: referenceTable.map(\.0))
    func descriptionParsesBackToTheSameRules(descriptor: String) {
        let rules = PasswordRules(parsing: descriptor)
        let reparsed = PasswordRules.parse(rules.description)
        #expect(reparsed.diagnostics.isEmpty, "\(rules.description)")
        #expect(reparsed.rules == rules, "\(rules.description)")
    }

    // MARK: Formats

    @Test func classicPasswordsHaveTheDocumentedShapeAndSets() {
        var random = SeededRandom(seed: 1)
        let sets = PasswordGenerator.classicSets.map(Set.init)
        let alphabet = sets.reduce(into: Set<UInt8>()) { $0.formUnion($1) }
        var seen = Set<UInt8>()
        for _ in 0..<3000 {
            let password = Array(PasswordGenerator.classic(using: &random).utf8)
            #expect(password.count == 15)
            #expect([3, 7, 11].allSatisfy { password[$0] == UInt8(ascii: "-") })
            let characters = password.enumerated().filter { ![3, 7, 11].contains($0.offset) }.map(\.element)
            #expect(characters.allSatisfy(alphabet.contains))
            #expect(sets.allSatisfy { set in characters.contains(where: set.contains) })
            seen.formUnion(characters)
        }
        #expect(seen == alphabet)
        #expect(alphabet.count == 53)
    }

    @Test func strongPasswordsHaveSafarisShape() {
        var random = SeededRandom(seed: 2)
        let consonants = Set(PasswordGenerator.consonants)
        let vowels = Set(PasswordGenerator.vowels)
        var digitPlaces = Set<Int>()
        var upperPlaces = Set<Int>()
        for _ in 0..<3000 {
            let password = Array(PasswordGenerator.strong(using: &random).utf8)
            #expect(password.count == 20)
            #expect(password[6] == UInt8(ascii: "-") && password[13] == UInt8(ascii: "-"))
            #expect(password.filter { $0 == UInt8(ascii: "-") }.count == 2)
            let digits = password.indices.filter { (48...57).contains(password[$0]) }
            let uppers = password.indices.filter { (65...90).contains(password[$0]) }
            #expect(digits.count == 1 && uppers.count == 1)
            #expect(password.filter { (97...122).contains($0) }.count == 16)
            digitPlaces.formUnion(digits)
            upperPlaces.formUnion(uppers)
            for (offset, character) in password.enumerated() where offset != 6 && offset != 13 {
                guard !digits.contains(offset) else { continue }
                let lower = uppers.contains(offset) ? character + 0x20 : character
                let slot = (offset % 7)
                #expect([0, 2, 3, 5].contains(slot) ? consonants.contains(lower) : vowels.contains(lower))
            }
        }
        #expect(digitPlaces == [0, 5, 7, 12, 14, 19])
        #expect(upperPlaces.count == 18)
    }

    // MARK: Rules

    static let generatorDescriptors = [
        "",
        "required: upper; required: digit; allowed: lower; minlength: 12; maxlength: 12",
        "required: lower; required: upper; required: digit; required: [-!@#$%^&*_+=`|(){}[:;\"'<>,.?]]; minlength: 8; maxlength: 16;",
        "allowed: upper, lower, digit, [-().&@?'#,/\"+]; max-consecutive: 2",
        "required: [ab]; max-consecutive: 1; minlength: 6; maxlength: 6; allowed: [abc]",
        "minlength: 40; required: special; required: unicode",
        "maxlength: 3; required: upper, digit; required: digit; required: [x]",
        "required: []; allowed: digit; maxlength: 4",
        "allowed: [ab]; max-consecutive: 1; minlength: 200",
        "required: [x]; required: [y]; allowed: [xy]; max-consecutive: 2; maxlength: 9",
    ]

    @Test(arguments: generatorDescriptors)
    func generatedPasswordsSatisfyTheirRules(descriptor: String) throws {
        let rules = PasswordRules(parsing: descriptor)
        var random = SeededRandom(seed: UInt64(descriptor.utf8.count))
        let length = try PasswordGenerator.length(for: rules)
        let allowed = characters(rules.allowed)
        for _ in 0..<2000 {
            let password = Array(try PasswordGenerator.generateIgnoringStrength(following: rules, using: &random).utf8)
            #expect(password.count == length)
            #expect(password.count >= (rules.minLength ?? 1) && password.count <= (rules.maxLength ?? .max))
            #expect(password.allSatisfy(allowed.contains), "\(descriptor)")
            for required in rules.required where !required.isEmpty {
                let set = characters(required)
                #expect(password.contains(where: set.contains), "\(descriptor)")
            }
            if let limit = rules.maxConsecutive { #expect(PasswordGenerator.longestRun(password) <= limit) }
        }
    }

    @Test(arguments: [
        ("minlength: 10; maxlength: 8", PasswordGenerationError.Code.contradictoryLengths),
        ("minlength: 5000", .tooLong),
        ("required: upper; required: lower; required: digit; maxlength: 2", .tooManyRequiredClasses),
        ("allowed: [a]; max-consecutive: 3", .maxConsecutiveUnsatisfiable),
        ("allowed: [a]; max-consecutive: 3; minlength: 3", .maxConsecutiveUnsatisfiable),
        ("required: [x]; allowed: [x]; max-consecutive: 2; minlength: 3", .maxConsecutiveUnsatisfiable),
    ])
    func impossibleRulesAreRefused(descriptor: String, code: PasswordGenerationError.Code) {
        var random = SeededRandom(seed: 3)
        #expect(throws: PasswordGenerationError(code, "")) {
            try PasswordGenerator.generateIgnoringStrength(
                following: PasswordRules(parsing: descriptor), using: &random)
        }
    }

    @Test func possibleEdgeRulesAreMet() throws {
        var random = SeededRandom(seed: 4)
        let single = PasswordRules(parsing: "allowed: [a]; max-consecutive: 3; maxlength: 3")
        #expect(try PasswordGenerator.generateIgnoringStrength(following: single, using: &random) == "aaa")
        let tight = PasswordRules(parsing: "required: [x]; required: [y]; required: [z]; maxlength: 3")
        #expect(
            Set(try PasswordGenerator.generateIgnoringStrength(following: tight, using: &random)) == ["x", "y", "z"])
    }

    /// Issue 23, attack 9: rules that allowed it gave `aaaaaaaaaaaaaaaaaaaa` without a word. Generated passwords
    /// now need 40 bits; the default formats and ordinary rules have far more.
    @Test(arguments: [
        ("allowed: [a]; minlength: 20", 0),
        ("allowed: digit; maxlength: 8", 26),
        ("allowed: digit; maxlength: 12", 39),
        ("allowed: [ab]; max-consecutive: 1; minlength: 200", 1),
        ("required: [x]; required: [y]; allowed: [xy]; max-consecutive: 2; maxlength: 9", 0),
    ])
    func rulesThatLeaveTooLittleRandomnessAreRefused(descriptor: String, bits: Int) throws {
        var random = SeededRandom(seed: 5)
        let error = #expect(throws: PasswordGenerationError.self) {
            try PasswordGenerator.generate(following: PasswordRules(parsing: descriptor), using: &random)
        }
        #expect(error?.code == .tooWeak)
        #expect(
            error?.description.contains("at most \(bits) bits of randomness, below the 40") == true,
            "\(error?.description ?? "")")
    }

    @Test func ordinaryRulesClearTheFloor() throws {
        let cases: [(String, ClosedRange<Double>)] = [
            ("", 130...132),  // 20 printable ASCII characters: 20 × log2(95) = 131.4
            ("allowed: digit; maxlength: 13", 43...44),  // 13 × log2(10) = 43.2
            ("required: upper; required: digit; allowed: lower; minlength: 12; maxlength: 12", 67...68),
            ("allowed: upper, lower, digit; max-consecutive: 2", 117...119),  // 20 × log2(62), less the repeats
        ]
        for (descriptor, expected) in cases {
            let plan = try PasswordGenerator.Plan(PasswordRules(parsing: descriptor))
            #expect(expected.contains(plan.strength), "\(descriptor): \(plan.strength)")
            var random = SeededRandom(seed: 6)
            _ = try PasswordGenerator.generate(following: plan, using: &random)
        }
    }

    private func characters(_ classes: [PasswordCharacterClass]) -> Set<UInt8> {
        Set(
            (0x20...0x7E).filter { character in
                classes.contains { characterClass in
                    switch characterClass {
                    case .upper: (65...90).contains(character)
                    case .lower: (97...122).contains(character)
                    case .digit: (48...57).contains(character)
                    case .special:
                        !(65...90).contains(character) && !(97...122).contains(character)
                            && !(48...57).contains(character)
                    case .asciiPrintable, .unicode: true
                    case .custom(let members): members.contains(character)
                    }
                }
            })
    }
}
