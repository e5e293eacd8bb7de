import JSON
import PublicSuffix
import Testing
import WebAuthnClient

@testable import TerminalIO

/// What `passkey inspect origin` prints, and how its `--batch` reads a line.
struct OriginCheckLinesTests {
    let list: PublicSuffixList

    init() throws {
        list = try PublicSuffixList(text: "// ===BEGIN ICANN DOMAINS===\ncom\nco.uk\n// ===END ICANN DOMAINS===\n")
    }

    @Test func aVerdictAsTextAndJSON() {
        let verdict = RelyingPartyIDVerdict(
            valid: false, rule: .notASuffix, reason: "not a suffix\u{1B}[31m", origin: "https://a.example.com",
            rpID: nil)
        #expect(
            OriginCheckLines.text(verdict) == [
                "valid    no", "reason   not a suffix\\u{1B}[31m", "rule     notASuffix",
                "origin   https://a.example.com",
                "RP ID    none",
            ])
        #expect(
            String(decoding: OriginCheckLines.json(verdict).serialized(), as: UTF8.self)
                == #"{"origin":"https://a.example.com","reason":"not a suffix\u001b[31m","rpId":null,"rule":"notASuffix","valid":false}"#
        )
    }

    @Test func aBatchLineChecksTheOriginAgainstItsRPID() throws {
        let suffix = try #require(
            OriginCheckLines.batch(line: Array("https://login.example.com\texample.com".utf8), list: list))
        #expect(suffix["valid"] == .bool(true))
        #expect(suffix["rule"] == .string("registrableSuffix"))
        #expect(suffix["rpId"] == .string("example.com"))
        // No tab: the origin's host is the RP ID; a CR before the line feed is dropped.
        let host = try #require(OriginCheckLines.batch(line: Array("https://example.com\r".utf8), list: list))
        #expect(host["rule"] == .string("defaultRPID"))
        #expect(host["origin"] == .string("https://example.com"))
        let publicSuffix = try #require(
            OriginCheckLines.batch(line: Array("https://shop.example.co.uk\tco.uk".utf8), list: list))
        #expect(publicSuffix["valid"] == .bool(false))
        #expect(publicSuffix["rule"] == .string("rpIDIsPublicSuffix"))
    }

    @Test func aBatchLineThatIsNotAURLIsBadURLAndAnEmptyOneIsSkipped() throws {
        let bad = try #require(OriginCheckLines.batch(line: Array("not a url\tx.com".utf8), list: list))
        #expect(bad["valid"] == .bool(false))
        #expect(bad["rule"] == .string("badURL"))
        #expect(bad["origin"] == .null)
        #expect(bad["rpId"] == .string("x.com"))
        if case .string(let reason)? = bad["reason"] {
            #expect(reason.hasPrefix("not a url is not a URL: "))
        } else {
            Issue.record("reason is not a string: \(String(describing: bad["reason"]))")
        }
        #expect(OriginCheckLines.batch(line: [UInt8](), list: list) == nil)
        #expect(OriginCheckLines.batch(line: Array("\r".utf8), list: list) == nil)
    }
}
