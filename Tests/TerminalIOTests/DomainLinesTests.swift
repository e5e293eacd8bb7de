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
        try table.record(
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
    @Test func aLinkVerdictNamesTheRuleThatDecided() throws {
        let file =
            #"{"applinks":{"details":[{"appID":"ABCDE12345.com.example.app","paths":["NOT /private/*","/shop/*"]}]}}"#
        let association = try AppSiteAssociation(json: Array(file.utf8))
        let app = try AppID("ABCDE12345.com.example.app")
        let open = association.match(url: "https://example.com/shop/1", app: app, domain: nil)
        #expect(
            DomainLines.link(open) == [
                "verdict  open", "reason   \(open.reason)", "rule     applinks.details[0].paths[1]  /shop/*",
                "form     ios9 (iOS 9 paths)",
            ])
        let json = DomainLines.linkJSON(open)
        #expect(json["verdict"] == .string("open"))
        #expect(json["form"] == .string("ios9"))
        #expect(json["rule"]?["location"] == .string("applinks.details[0].paths[1]"))
        #expect(json["rule"]?["detail"] == .number(0))
        #expect(json["rule"]?["index"] == .number(1))
        #expect(json["rule"]?["pattern"] == .string("/shop/*"))
        // Another host: the browser, and no rule.
        let browser = association.match(url: "https://other.example/shop/1", app: app, domain: "example.com")
        #expect(DomainLines.link(browser).count == 2)
        #expect(DomainLines.linkJSON(browser)["rule"] == .null)
        #expect(DomainLines.linkJSON(browser)["form"] == .null)
    }

    @Test func aBannerAsTextAndJSON() throws {
        let html =
            "<meta name=\"apple-itunes-app\" content=\"app-id=123456, app-argument=x\u{1B}y, z=1\">"
            + "<meta name=\"apple-itunes-app\" content=\"app-id=9\">"
        let banner = try SmartAppBanner(html: Array(html.utf8))
        let lines = DomainLines.banner(banner)
        #expect(lines.first == "app-id          123456")
        #expect(lines.contains("affiliate-data  absent"))
        #expect(lines.last == "note            the page has 2 apple-itunes-app tags; only the first counts")
        #expect(!lines.joined().contains("\u{1B}"))
        let json = DomainLines.bannerJSON(banner)
        #expect(json["appId"] == .string("123456"))
        #expect(json["affiliateData"] == .null)
        #expect(json["tags"] == .number(2))
    }
}
