import AssociatedDomains
import Foundation
import JSON
import Testing

@testable import TerminalIO

/// What `passkey domains check` and `domains list` print.
struct DomainLinesTests {
    static let checked = Date(timeIntervalSince1970: 1_795_000_000)

    @Test func aVerdictAsTextAndJSON() throws {
        let signed = CheckVerdict(
            state: .approved, reason: "the file names the app\u{7}", url: "https://example.com/.well-known/aasa",
            status: 200, signer: "CN=example.com")
        #expect(
            DomainLines.verdict(signed) == [
                "state    approved", "reason   the file names the app\\u{7}",
                "url      https://example.com/.well-known/aasa", "status   200", "signer   CN=example.com",
            ])
        let pending = CheckVerdict(state: .pending, reason: "no answer", url: "https://example.com/x")
        #expect(DomainLines.verdict(pending).last == "status   none")
        let json = DomainLines.verdictJSON(
            pending, entitlement: try Entitlement(service: .webcredentials, domain: "example.com"),
            app: try AppID("ABCDE12345.com.example.app"))
        #expect(
            String(decoding: json.serialized(), as: UTF8.self)
                == #"{"app":"ABCDE12345.com.example.app","entitlement":"webcredentials:example.com","reason":"no answer","signer":null,"state":"pending","status":null,"url":"https://example.com/x"}"#
        )
    }

    @Test func theTableAsTextAndJSON() throws {
        #expect(
            DomainLines.table(ApprovalTable()) == ["No domains checked yet (passkey domains check DOMAIN --app ID)."])
        #expect(DomainLines.tableJSON(ApprovalTable()) == .array([]))
        var table = ApprovalTable()
        table.record(
            CheckVerdict(state: .denied, reason: "an HTML page", url: "https://example.com/a", status: 200),
            entitlement: try Entitlement(service: .webcredentials, domain: "example.com"),
            app: try AppID("ABCDE12345.com.example.app"), at: Self.checked)
        #expect(
            DomainLines.table(table) == [
                "webcredentials:example.com  ABCDE12345.com.example.app  denied  2026-11-18T11:06:40Z",
                "    an HTML page",
            ])
        guard case .array(let entries) = DomainLines.tableJSON(table) else {
            Issue.record("the table's JSON is not an array")
            return
        }
        #expect(entries.count == 1)
        #expect(entries.first?["checked"] == .string("2026-11-18T11:06:40Z"))
        #expect(entries.first?["status"] == .number(200))
        #expect(entries.first?["signer"] == .null)
        #expect(entries.first?["state"] == .string("denied"))
    }
}
