import Foundation
import PublicSuffix
import WebAuthnClient

/// The browser-side checks: the public suffix list's parser and lookups, and origins with RP IDs.
enum ClientTargets {
    /// A small list with each kind of rule: plain, wildcard, exception, Unicode, both sections.
    static let sampleList = """
        // ===BEGIN ICANN DOMAINS===
        com
        net
        de
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

    private static let list = try! PublicSuffixList(text: sampleList)

    // MARK: Public suffix list

    static let publicSuffix: FuzzTarget = FuzzTarget(
        name: "public-suffix",
        summary: "a list (a chunk) and hosts (a line each): lookups agree with the formal algorithm over every rule",
        seeds: {
            let hosts = [
                "www.example.co.uk", "co.uk", "a.b.c.kobe.jp", "www.city.kobe.jp", "www.www.ck", "x.y.ck",
                "xn--85x722f.xn--55qx5d.cn", "whatwg.github.io", "a.eu-west-1.compute.amazonaws.com", "example",
                ".com", "example.com.", "食狮.公司.cn", "ex_ample.com",
            ].joined(separator: "\n")
            return [
                FuzzInput.chunks([Array(sampleList.utf8)]) + Array(hosts.utf8),
                FuzzInput.chunks([Array("a.*.b\n*.*.c\n!x.a.y.b\n".utf8)]) + Array("q.x.a.y.b\np.q.c\nc".utf8),
                FuzzInput.chunks([Array("com\na..b\n".utf8)]) + Array("example.com".utf8),
                FuzzInput.chunks([[0xEF, 0xBB, 0xBF] + Array("com\r\nnet // x\r\n".utf8)]) + Array("a.net".utf8),
            ]
        },
        run: { input in
            var reader = FuzzInput(input)
            let listBytes = reader.chunk() ?? []
            let parsed = try? PublicSuffixList(bytes: listBytes)
            let list = parsed ?? Self.list
            for line in reader.rest().split(separator: UInt8(ascii: "\n")).prefix(64) {
                let text = String(decoding: line, as: UTF8.self)
                checkPunycode(text)
                guard let name = try? DomainName(text) else { continue }
                for sections in [PublicSuffixList.Sections.all, .icannOnly] {
                    checkLookup(name, list: list, sections: sections)
                }
            }
        })

    /// Encoding then decoding gives the label back (long texts are cut: the encoder is quadratic in them).
    private static func checkPunycode(_ text: String) {
        let scalars = Array(text.unicodeScalars.prefix(256))
        guard let encoded = try? Punycode.encode(scalars) else { return }
        expect((try? Punycode.decode(encoded)) == scalars, "Punycode did not round-trip \(scalars.count) scalars")
    }

    /// The trie's answer against publicsuffix.org's algorithm, rule by rule.
    private static func checkLookup(_ name: DomainName, list: PublicSuffixList, sections: PublicSuffixList.Sections) {
        let match = list.match(name, sections: sections)
        let rules = list.rules.filter { sections == .all || $0.section == .icann }
        let matching = rules.filter { rule in
            rule.labels.count <= name.labels.count
                && zip(rule.labels.reversed(), name.labels.reversed()).allSatisfy { $0 == "*" || $0 == $1 }
        }
        let exception = matching.filter(\.isException).map(\.labels.count).max()
        let expected = exception.map { $0 - 1 } ?? matching.filter { !$0.isException }.map(\.labels.count).max() ?? 1
        expect(match.suffixLabelCount == expected, "the trie and the algorithm disagree on \(name)")
        expect(match.publicSuffix == String(name.suffix(labels: expected)), "the public suffix is not the last labels")
        let registrable = expected < name.labels.count ? String(name.suffix(labels: expected + 1)) : nil
        expect(match.registrableDomain == registrable, "the registrable domain is not one label more")
        if let rule = match.rule {
            expect(matching.contains(rule), "the reported rule does not match \(name)")
        } else {
            expect(matching.isEmpty, "the default rule was reported although \(matching.count) rules match")
        }
    }

    // MARK: Origins and RP IDs

    static let rpID: FuzzTarget = FuzzTarget(
        name: "rp-id",
        summary:
            "an origin URL, an RP ID and a related origins (or passkey endpoints) document: accepted RP IDs keep "
            + "every suffix rule",
        seeds: {
            let cases: [(String, String, String)] = [
                ("https://login.example.co.uk:8443", "example.co.uk", #"{"origins": ["https://a.de"]}"#),
                ("https://login.example.com:1337", "com", ""),
                ("http://localhost:8000", "localhost", ""),
                ("http://app.localhost", "localhost", ""),
                ("https://www.city.kobe.jp", "kobe.jp", ""),
                ("https://a.b.c.kobe.jp", "c.kobe.jp", ""),
                ("https://127.0.0.1", "127.0.0.1", ""),
                ("https://[::1]:8443", "[::1]", ""),
                ("blob:https://whatwg.github.io/x", "github.io", ""),
                ("data:text/plain,x", "x", ""),
                (
                    "https://shop.example.de", "example.com",
                    #"{"origins": ["https://a.com", "https://b.com", "https://c.com", "https://d.com", "#
                        + #""https://shop.example.de"]}"#
                ),
                ("https://0x7f.1", "", #"{"origins": [1, "x"]}"#),
                (
                    "https://example.com", "example.com",
                    #"{"enroll": "https://example.com/passkeys/new", "manage": "https://example.com/passkeys"}"#
                ),
            ]
            return cases.map { FuzzInput.chunks([Array($0.0.utf8), Array($0.1.utf8)]) + Array($0.2.utf8) }
        },
        run: { input in
            var reader = FuzzInput(input)
            let originText = String(decoding: reader.chunk() ?? [], as: UTF8.self)
            let rpIDBytes = reader.chunk()
            let document = reader.rest()
            guard let origin = try? WebOrigin(url: originText) else { return }
            if case .tuple = origin {
                expect((try? WebOrigin(url: origin.description)) == origin, "a serialized origin reads differently")
            }
            let rpID = rpIDBytes.map { String(decoding: $0, as: UTF8.self) }
            let verdict = RelyingPartyIDCheck.evaluate(origin: origin, rpID: rpID, list: list)
            expect(!verdict.reason.isEmpty, "a verdict without a reason")
            if verdict.valid { checkAccepted(verdict, origin: origin, given: rpID) }

            // The same bytes as the other well-known document, passkey endpoints: what it accepts names a URL.
            if let endpoints = try? PasskeyEndpoints(document: document) {
                expect(endpoints.enroll != nil || endpoints.manage != nil, "passkey endpoints that name neither URL")
                for url in [endpoints.enroll, endpoints.manage].compactMap({ $0 }) {
                    let scheme = URL(string: url)?.scheme?.lowercased()
                    expect(scheme == "https" || scheme == "http", "passkey endpoints accepted a non-web URL")
                }
            }

            let response = WellKnownResponse(status: 200, contentType: "application/json", body: document)
            guard let origins = try? RelatedOrigins.origins(in: response) else { return }
            let outcome = RelatedOrigins.validate(callerOrigin: origin, origins: origins, list: list)
            expect(outcome.labelsSeen.count <= RelatedOrigins.maximumLabels, "more labels counted than the budget")
            expect(Set(outcome.labelsSeen).count == outcome.labelsSeen.count, "a label counted twice")
            if outcome.matched {
                let listed = origins.contains { (try? WebOrigin(url: $0)).map(origin.isSameOrigin) ?? false }
                expect(listed, "related origins allowed an origin that is not in the document")
            }
        })

    /// What every accepted verdict must satisfy, checked from scratch.
    private static func checkAccepted(_ verdict: RelyingPartyIDVerdict, origin: WebOrigin, given: String?) {
        guard case .tuple(let scheme, .domain(let hostText), _) = origin, let host = try? DomainName(hostText) else {
            fatalError("fuzz invariant broken: accepted an opaque origin or an IP address")
        }
        expect(scheme == "https" || (scheme == "http" && host.labels.last == "localhost"), "accepted \(scheme)")
        guard let rpIDText = verdict.rpID, let rpID = try? DomainName(rpIDText) else {
            fatalError("fuzz invariant broken: accepted an RP ID that is no domain")
        }
        expect(given == nil || rpID.text == given!.lowercased(), "the reported RP ID is not the one given")
        expect(host.isSubdomain(of: rpID), "accepted an RP ID that is not a suffix of the host")
        if rpID != host {
            let rpIDMatch = list.match(rpID)
            expect(rpIDMatch.registrableDomain != nil, "accepted a public suffix as RP ID")
            expect(list.match(host).suffixLabelCount < rpID.labels.count, "accepted an RP ID inside the public suffix")
        }
    }
}
