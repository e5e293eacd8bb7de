import Foundation
import PublicSuffix
import TestSupport
import Testing

/// The system's list, as Debian's `publicsuffix` package installs it (Tools/lib/setup.sh installs the package).
enum SystemList {
    static let path = "/usr/share/publicsuffix/public_suffix_list.dat"
    static let list: PublicSuffixList? = {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return try? PublicSuffixList(bytes: data)
    }()
}

/// publicsuffix.org's own test cases (`tests/test_psl.txt` of github.com/publicsuffix/list), typed in from its
/// `checkPublicSuffix(domain, expected registrable domain)` calls, run against the system's list.
struct PublicSuffixOrgTests {
    /// (domain, registrable domain); nil for `null`. Unicode domains are converted to `xn--` labels first.
    static let cases: [(String?, String?)] = [
        // null input.
        (nil, nil),
        // Mixed case.
        ("COM", nil), ("example.COM", "example.com"), ("WwW.example.COM", "example.com"),
        // Leading dot.
        (".com", nil), (".example", nil), (".example.com", nil), (".example.example", nil),
        // Unlisted TLD.
        ("example", nil), ("example.example", "example.example"), ("b.example.example", "example.example"),
        ("a.b.example.example", "example.example"),
        // TLD with only 1 rule.
        ("biz", nil), ("domain.biz", "domain.biz"), ("b.domain.biz", "domain.biz"), ("a.b.domain.biz", "domain.biz"),
        // TLD with some 2-level rules.
        ("com", nil), ("example.com", "example.com"), ("b.example.com", "example.com"),
        ("a.b.example.com", "example.com"), ("uk.com", nil), ("example.uk.com", "example.uk.com"),
        ("b.example.uk.com", "example.uk.com"), ("a.b.example.uk.com", "example.uk.com"), ("test.ac", "test.ac"),
        // TLD with only 1 (wildcard) rule.
        ("mm", nil), ("c.mm", nil), ("b.c.mm", "b.c.mm"), ("a.b.c.mm", "b.c.mm"),
        // More complex TLD.
        ("jp", nil), ("test.jp", "test.jp"), ("www.test.jp", "test.jp"), ("ac.jp", nil), ("test.ac.jp", "test.ac.jp"),
        ("www.test.ac.jp", "test.ac.jp"), ("kyoto.jp", nil), ("test.kyoto.jp", "test.kyoto.jp"),
        ("ide.kyoto.jp", nil), ("b.ide.kyoto.jp", "b.ide.kyoto.jp"), ("a.b.ide.kyoto.jp", "b.ide.kyoto.jp"),
        ("c.kobe.jp", nil), ("b.c.kobe.jp", "b.c.kobe.jp"), ("a.b.c.kobe.jp", "b.c.kobe.jp"),
        ("city.kobe.jp", "city.kobe.jp"), ("www.city.kobe.jp", "city.kobe.jp"),
        // TLD with a wildcard rule and exceptions.
        ("ck", nil), ("test.ck", nil), ("b.test.ck", "b.test.ck"), ("a.b.test.ck", "b.test.ck"), ("www.ck", "www.ck"),
        ("www.www.ck", "www.ck"),
        // US K12.
        ("us", nil), ("test.us", "test.us"), ("www.test.us", "test.us"), ("ak.us", nil),
        ("test.ak.us", "test.ak.us"), ("www.test.ak.us", "test.ak.us"), ("k12.ak.us", nil),
        ("test.k12.ak.us", "test.k12.ak.us"), ("www.test.k12.ak.us", "test.k12.ak.us"),
        // IDN labels.
        ("食狮.com.cn", "食狮.com.cn"), ("食狮.公司.cn", "食狮.公司.cn"), ("www.食狮.公司.cn", "食狮.公司.cn"),
        ("shishi.公司.cn", "shishi.公司.cn"), ("公司.cn", nil), ("食狮.中国", "食狮.中国"), ("www.食狮.中国", "食狮.中国"),
        ("shishi.中国", "shishi.中国"), ("中国", nil),
        // Same as above, but punycoded.
        ("xn--85x722f.com.cn", "xn--85x722f.com.cn"), ("xn--85x722f.xn--55qx5d.cn", "xn--85x722f.xn--55qx5d.cn"),
        ("www.xn--85x722f.xn--55qx5d.cn", "xn--85x722f.xn--55qx5d.cn"),
        ("shishi.xn--55qx5d.cn", "shishi.xn--55qx5d.cn"),
        ("xn--55qx5d.cn", nil), ("xn--85x722f.xn--fiqs8s", "xn--85x722f.xn--fiqs8s"),
        ("www.xn--85x722f.xn--fiqs8s", "xn--85x722f.xn--fiqs8s"), ("shishi.xn--fiqs8s", "shishi.xn--fiqs8s"),
        ("xn--fiqs8s", nil),
    ]

    /// A Unicode name in the form hosts arrive in: each label through the Punycode encoder.
    static func ascii(_ name: String) throws -> String {
        try name.split(separator: ".", omittingEmptySubsequences: false).map { try Punycode.asciiLabel($0) }
            .joined(separator: ".")
    }

    @Test(arguments: cases)
    func checkPublicSuffix(domain: String?, expected: String?) throws {
        let list = try #require(SystemList.list)
        // null has no registrable domain; names with a leading dot are no domain: here they throw.
        guard let domain else { return #expect(expected == nil) }
        if domain.hasPrefix(".") {
            #expect(throws: DomainNameError.emptyLabel) { try list.registrableDomain(of: Self.ascii(domain)) }
            return #expect(expected == nil)
        }
        let registrable = try list.registrableDomain(of: Self.ascii(domain))
        #expect(registrable == (try expected.map(Self.ascii)), "checkPublicSuffix(\(domain))")
    }
}

/// The list's format and algorithm on small lists written for each rule.
struct PublicSuffixListFormatTests {
    static let sample = """
        // A comment, then a blank line.

        // ===BEGIN ICANN DOMAINS===
        com
        uk
        co.uk
        jp
        *.kobe.jp
        !city.kobe.jp
        *.ck
        !www.ck
        公司.cn
        cn
        io
        // ===END ICANN DOMAINS===
        // ===BEGIN PRIVATE DOMAINS===
        github.io
        *.compute.amazonaws.com
        // ===END PRIVATE DOMAINS===
        """

    static let list = try! PublicSuffixList(text: sample)

    @Test(
        arguments: [
            // (host, public suffix, registrable domain, prevailing rule)
            ("com", "com", nil, "com"),
            ("example.com", "com", "example.com", "com"),
            ("a.b.example.com", "com", "example.com", "com"),
            ("example.co.uk", "co.uk", "example.co.uk", "co.uk"),
            ("co.uk", "co.uk", nil, "co.uk"),
            ("b.c.kobe.jp", "c.kobe.jp", "b.c.kobe.jp", "*.kobe.jp"),
            ("c.kobe.jp", "c.kobe.jp", nil, "*.kobe.jp"),
            ("kobe.jp", "jp", "kobe.jp", "jp"),
            ("www.city.kobe.jp", "kobe.jp", "city.kobe.jp", "!city.kobe.jp"),
            ("www.www.ck", "ck", "www.ck", "!www.ck"),
            ("a.b.ck", "b.ck", "a.b.ck", "*.ck"),
            ("xn--85x722f.xn--55qx5d.cn", "xn--55qx5d.cn", "xn--85x722f.xn--55qx5d.cn", "xn--55qx5d.cn"),
            ("whatwg.github.io", "github.io", "whatwg.github.io", "github.io"),
            ("github.io", "github.io", nil, "github.io"),
            (
                "x.eu-west-1.compute.amazonaws.com", "eu-west-1.compute.amazonaws.com",
                "x.eu-west-1.compute.amazonaws.com",
                "*.compute.amazonaws.com"
            ),
            // No rule matches: the default rule * makes the last label the public suffix.
            ("example", "example", nil, "*"),
            ("www.example.test", "test", "example.test", "*"),
            ("amazonaws.com", "com", "amazonaws.com", "com"),
        ] as [(String, String, String?, String)])
    func findsThePrevailingRule(host: String, suffix: String, registrable: String?, rule: String) throws {
        let match = Self.list.match(try DomainName(host))
        #expect(match.publicSuffix == suffix)
        #expect(match.registrableDomain == registrable)
        #expect(match.ruleDescription == rule)
        #expect(match.suffixLabelCount == suffix.split(separator: ".").count)
    }

    @Test func privateRulesCountUnlessOnlyICANNIsAsked() throws {
        let name = try DomainName("whatwg.github.io")
        #expect(Self.list.match(name).rule?.section == .private)
        #expect(Self.list.match(name, sections: .icannOnly).publicSuffix == "io")
        #expect(Self.list.match(name, sections: .icannOnly).registrableDomain == "github.io")
        let amazon = try DomainName("x.eu-west-1.compute.amazonaws.com")
        #expect(Self.list.match(amazon, sections: .icannOnly).registrableDomain == "amazonaws.com")
    }

    @Test func readsTheRulesWithTheirSectionsAndLines() throws {
        #expect(Self.list.rules.count == 13)
        #expect(
            Self.list.rules.filter { $0.section == .private }.map(\.description) == [
                "github.io", "*.compute.amazonaws.com",
            ])
        #expect(Self.list.rules.filter(\.isException).map(\.description) == ["!city.kobe.jp", "!www.ck"])
        let chinese = try #require(Self.list.rules.first { $0.labels.first == "xn--55qx5d" })
        #expect(chinese.line == 12)
        #expect(chinese.description == "xn--55qx5d.cn")
    }

    @Test func readsEachLineUpToItsFirstWhitespace() throws {
        let list = try PublicSuffixList(text: "com trailing words\r\nnet\t// a comment\r\n   org\r\n.io\n")
        #expect(list.rules.map(\.description) == ["com", "net", "io"])
        // "   org" starts with whitespace: read up to it, the line is empty.
        #expect(list.match(try DomainName("example.org")).rule == nil)
    }

    @Test func takesAByteOrderMarkAndUpperCase() throws {
        let list = try PublicSuffixList(bytes: Array("\u{FEFF}COM\nCo.UK\n".utf8))
        #expect(list.rules.map(\.description) == ["com", "co.uk"])
    }

    @Test func wildcardsMayStandAnywhere() throws {
        // "Wildcards are not restricted to appear only in the leftmost position" (publicsuffix.org).
        let list = try PublicSuffixList(text: "a.*.b\n*.*.c\n")
        #expect(list.match(try DomainName("x.a.y.b")).publicSuffix == "a.y.b")
        #expect(list.match(try DomainName("x.a.y.b")).registrableDomain == "x.a.y.b")
        #expect(list.match(try DomainName("p.q.c")).publicSuffix == "p.q.c")
        #expect(list.match(try DomainName("q.c")).publicSuffix == "c")
    }

    @Test func anExceptionWinsOverALongerRule() throws {
        // Step 3 of the algorithm: an exception prevails even if another matching rule has more labels.
        let list = try PublicSuffixList(text: "*.b.c\n!a.b.c\nx.y.a.b.c\n")
        let match = list.match(try DomainName("w.x.y.a.b.c"))
        #expect(match.ruleDescription == "!a.b.c")
        #expect(match.publicSuffix == "b.c")
    }

    @Test(arguments: [
        ("com\na..b\n", 2 as Int?, PublicSuffixListError.Code.badRule),
        ("com\n*a.b\n", 2, .badRule),
        ("com\n!com\n", 2, .badRule),
        ("com\n!\n", 2, .badRule),
        ("com\nexample.com/path\n", 2, .badRule),
        ("com\nex_ample.com\n", 2, .badRule),
        ("com\n\(String(repeating: "a", count: 64)).com\n", 2, .badRule),
        ("com\n\(String(repeating: "é", count: 60)).com\n", 2, .badRule),  // 60 characters, 66 in Punycode
        ("com\n\(Array(repeating: "abcdefgh", count: 30).joined(separator: ".")).com\n", 2, .badRule),
        ("// only comments\n\n   \n", nil, .noRules),
        ("", nil, .noRules),
    ])
    func refusesGarbageLines(text: String, line: Int?, code: PublicSuffixListError.Code) {
        do {
            _ = try PublicSuffixList(text: text)
            Issue.record("parsed \(text.debugDescription)")
        } catch {
            #expect(error.code == code)
            #expect(error.line == line)
            #expect(!error.description.isEmpty)
        }
    }

    @Test func refusesAHugeLineAtItsFirstCharacters() {
        // 100,000 labels of 10 different Chinese characters, 3.1 MB in one line: refused once the rule passes 253
        // characters, before the rest is encoded.
        let label = String(String.UnicodeScalarView((0..<10).map { Unicode.Scalar(0x4E00 + 7 * $0)! }))
        let line = Array(repeating: label, count: 100_000).joined(separator: ".")
        do {
            _ = try PublicSuffixList(text: "com\n" + line + "\n")
            Issue.record("parsed a rule of \(line.utf8.count) bytes")
        } catch {
            #expect(error.code == .badRule)
            #expect(error.line == 2)
            #expect(error.description.contains("longer than 253"))
        }
    }

    @Test func refusesBytesThatAreNotUTF8AndSaysWhere() {
        #expect(throws: PublicSuffixListError.self) {
            try PublicSuffixList(bytes: Array("com\nnet\n".utf8) + [0xC3, 0x28])
        }
        do {
            _ = try PublicSuffixList(bytes: Array("com\nnet\n".utf8) + [0xFF, 0x0A])
        } catch {
            #expect(error.code == .notUTF8)
            #expect(error.line == 3)
        }
    }

    @Test func survivesSeededGarbage() {
        // Random lines of rule-like characters: every list either parses or names a bad line; lookups on parsed
        // lists return a suffix of the host.
        var generator = SeededRandom(seed: 42)
        let pieces = [
            "a", "b", "*", "!", ".", "..", "//", " ", "\t", "\r", "\n", "\n", "é", "中", "-", "_", "#", "\u{0}",
        ]
        var parsed = 0
        for _ in 0..<2_000 {
            let text = (0..<Int.random(in: 0...40, using: &generator)).map { _ in
                pieces.randomElement(using: &generator)!
            }
            .joined()
            guard let list = try? PublicSuffixList(text: text) else { continue }
            parsed += 1
            for host in ["a", "a.b", "b.a.b", "x.y.z.a.b"] {
                let match = list.match(try! DomainName(host))
                #expect(host == match.publicSuffix || host.hasSuffix("." + match.publicSuffix))
            }
        }
        #expect(parsed > 100)
    }

    @Test func aHostileListCostsNoMoreThanItsTrie() throws {
        // Every combination of a label and a wildcard at 40 levels would be 2^40 paths; the walk visits only the
        // trie's nodes that match, one per level here.
        let rules =
            (1...40).map { depth in Array(repeating: "*", count: depth).joined(separator: ".") }
            + (1...40).map { depth in Array(repeating: "a", count: depth).joined(separator: ".") }
        let list = try PublicSuffixList(text: rules.joined(separator: "\n"))
        let host = try DomainName(Array(repeating: "a", count: 50).joined(separator: "."))
        let match = list.match(host)
        #expect(match.suffixLabelCount == 40)
        #expect(match.registrableDomain?.split(separator: ".").count == 41)
    }
}

/// Names the list must refuse before any lookup.
struct DomainNameTests {
    @Test(arguments: [
        ("", DomainNameError.empty),
        (".", .trailingDot),
        (".com", .emptyLabel),
        ("a..com", .emptyLabel),
        ("example.com.", .trailingDot),
        ("example.com..", .trailingDot),
        ("bücher.de", .notASCII),
        ("exa mple.com", .badCharacter(" ")),
        ("example.com\u{0}", .badCharacter("\u{0}")),
        ("ex_ample.com", .badCharacter("_")),
        ("*.example.com", .badCharacter("*")),
        (String(repeating: "a", count: 64) + ".com", .labelTooLong(String(repeating: "a", count: 64))),
        (Array(repeating: "abcdefghi", count: 26).joined(separator: "."), .tooLong(259)),
        ("xn--.com", .badPunycode("xn--", "it decodes to ASCII only")),
        ("xn--abc-.com", .badPunycode("xn--abc-", "it decodes to ASCII only")),
    ])
    func refuses(text: String, error: DomainNameError) {
        #expect(throws: DomainNameError.self) { try DomainName(text) }
        do {
            _ = try DomainName(text)
        } catch let thrown {
            switch (thrown, error) {
            case (.badPunycode(let label, _), .badPunycode(let expected, _)): #expect(label == expected)
            default: #expect(thrown == error)
            }
            #expect(!thrown.description.isEmpty)
        }
    }

    @Test func refusesAHugeName() {
        // Kept out of the argument lists above, where the runner would print all 200,003 characters.
        #expect(throws: DomainNameError.tooLong(200_003)) {
            try DomainName(String(repeating: "a.", count: 100_000) + "com")
        }
        #expect(throws: DomainNameError.tooLong(1_000_000)) { try DomainName(String(repeating: "é", count: 500_000)) }
    }

    @Test func refusesPunycodeThatIsNotCanonical() {
        // "xn--bcher-kva" is bücher; the same digits in upper case decode alike and are lowered first, but a label
        // whose digits do not re-encode the same way is refused.
        #expect(throws: Never.self) { try DomainName("XN--BCHER-KVA.de") }
        #expect(throws: DomainNameError.self) { try DomainName("xn--9.de") }
        #expect(throws: DomainNameError.self) { try DomainName("xn--bcher-kva9.de") }
    }

    @Test func lowersAndSplits() throws {
        let name = try DomainName("WwW.Example.COM")
        #expect(name.text == "www.example.com")
        #expect(name.labels == ["www", "example", "com"])
        #expect(name.suffix(labels: 2) == "example.com")
        #expect(name.isSubdomain(of: try DomainName("example.com")))
        #expect(!name.isSubdomain(of: try DomainName("ample.com")))
        #expect(name.isSubdomain(of: name))
    }
}

/// The trie against the algorithm as publicsuffix.org writes it (every rule tried in turn), over the real list.
struct SystemListTests {
    @Test func hasBothSections() throws {
        let list = try #require(SystemList.list)
        let icann = list.rules.filter { $0.section == .icann }.count
        let privateRules = list.rules.count - icann
        #expect(icann > 5_000)
        #expect(privateRules > 1_000)
        #expect(list.rules.contains { $0.isException })
        #expect(list.rules.contains { $0.labels.first == "*" })
        #expect(try list.publicSuffix(of: "whatwg.github.io") == "github.io")
        #expect(try list.publicSuffix(of: "whatwg.github.io", sections: .icannOnly) == "io")
    }

    /// The formal algorithm, slowly: steps 1–7 over every rule.
    static func reference(_ name: DomainName, rules: [PublicSuffixList.Rule]) -> (suffix: Int, registrable: Bool) {
        // The caller leaves out rules whose last label differs from the name's (and is not *): for speed only.
        let matching = rules.filter { rule in
            rule.labels.count <= name.labels.count
                && zip(rule.labels.reversed(), name.labels.reversed()).allSatisfy { $0 == "*" || $0 == $1 }
        }
        let exception = matching.filter(\.isException).max { $0.labels.count < $1.labels.count }
        let count = exception.map { $0.labels.count - 1 } ?? matching.map(\.labels.count).max() ?? 1
        return (count, count < name.labels.count)
    }

    @Test func agreesWithTheFormalAlgorithmOnSeededHosts() throws {
        let list = try #require(SystemList.list)
        let byLastLabel = Dictionary(grouping: list.rules) { $0.labels.last! }
        var generator = SeededRandom(seed: 2026)
        let words = ["www", "a", "example", "city", "www", "k12", "co", "com", "b"]
        for index in 0..<3_000 {
            let rule = list.rules.randomElement(using: &generator)!
            var labels = rule.labels.map { $0 == "*" ? words.randomElement(using: &generator)! : $0 }
            // Drop or add labels so the host sits above, on and below the rule.
            let extra = Int.random(in: -1...2, using: &generator)
            if extra < 0 && labels.count > 1 { labels.removeFirst() }
            for _ in 0..<max(0, extra) { labels.insert(words.randomElement(using: &generator)!, at: 0) }
            let name = try DomainName(labels.joined(separator: "."))
            let match = list.match(name)
            let candidates = (byLastLabel[String(name.labels.last!)] ?? []) + (byLastLabel["*"] ?? [])
            let expected = Self.reference(name, rules: candidates)
            #expect(match.suffixLabelCount == expected.suffix, "\(name) (host \(index))")
            #expect((match.registrableDomain != nil) == expected.registrable, "\(name)")
        }
    }
}
