import AssociatedDomains
import AssociatedDomainsIO
import Foundation
import PasskeyFilesIO
import PasskeyStoreIO
import Testing

/// The table `passkey domains check` writes, read by the shared web credentials rules: only approved entries of the
/// service approve, by domain (with its port), for exactly that app; the table's file is read back the same.
struct ApprovalTableApprovalsTests {
    static let app = try! AppID("ABCDE12345.com.example.app")
    static let other = try! AppID("ZZZZZ99999.com.example.other")

    static func verdict(_ state: ApprovalState) -> CheckVerdict {
        CheckVerdict(state: state, reason: "because", url: "https://example.com/x", status: 200, file: nil)
    }

    @Test func onlyApprovedEntriesOfTheServiceApprove() throws {
        var table = ApprovalTable()
        let time = Date(timeIntervalSince1970: 1_800_000_000)
        try table.record(
            .init(state: .approved, reason: "listed", url: "u", status: 200, file: nil),
            entitlement: try Entitlement("webcredentials:Example.com"), app: Self.app, at: time)
        try table.record(
            Self.verdict(.approved), entitlement: try Entitlement("webcredentials:shop.example:8443"),
            app: Self.app, at: time)
        try table.record(
            Self.verdict(.denied), entitlement: try Entitlement("webcredentials:denied.example"),
            app: Self.app, at: time)
        try table.record(
            Self.verdict(.pending), entitlement: try Entitlement("webcredentials:later.example"),
            app: Self.app, at: time)
        try table.record(
            Self.verdict(.approved), entitlement: try Entitlement("applinks:links.example"),
            app: Self.app, at: time)
        try table.record(
            Self.verdict(.approved), entitlement: try Entitlement("webcredentials:other.example"),
            app: Self.other, at: time)

        let approvals = ApprovalTableApprovals(table)
        #expect(
            Set(approvals.approvedDomains(app: Self.app.description, service: "webcredentials"))
                == ["example.com", "shop.example:8443"])
        #expect(approvals.approvedDomains(app: Self.app.description, service: "applinks") == ["links.example"])
        #expect(approvals.approvedDomains(app: "ZZZZZ99999.x", service: "webcredentials") == [])
        #expect(SharedWebCredentials.isApproved(app: Self.app.description, domain: "example.com", approvals: approvals))
        #expect(
            !SharedWebCredentials.isApproved(app: Self.app.description, domain: "denied.example", approvals: approvals))

        // Through the file, as the commands read it: the same answers; no file approves nothing.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = ApprovalTableFile(
            url: PasskeyFiles(store: directory.appendingPathComponent("passkeys.sqlite")).domainApprovals)
        #expect(
            try ApprovalTableApprovals(file.load()).approvedDomains(
                app: Self.app.description, service: "webcredentials") == [])
        try file.save(table)
        #expect(
            Set(
                try ApprovalTableApprovals(file.load()).approvedDomains(
                    app: Self.app.description, service: "webcredentials"))
                == ["example.com", "shop.example:8443"])
    }

    /// Issue 23, attack 5: once the table outgrew its reader's limit, every command that reads it failed and the
    /// only repair was deleting the file by hand. The error now names the file, the reason and the repair, and
    /// `reset()` (`passkey domains forget --all`) starts an empty table without reading the old one.
    @Test func anUnreadableTableSaysHowToRepairItAndResetStartsAnEmptyOne() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = ApprovalTableFile(
            url: PasskeyFiles(store: directory.appendingPathComponent("passkeys.sqlite")).domainApprovals)
        for bytes in [[UInt8](repeating: 0x20, count: ApprovalTableFile.maximumSize + 1), Array("{not json".utf8)] {
            try OwnerOnlyFile.write(bytes, to: file.url)
            let error = #expect(throws: ApprovalTableError.self) { try file.load() }
            #expect(error?.code == .malformedTable)
            #expect(error?.description.hasPrefix("cannot use the approval table \(file.path): ") == true)
            #expect(error?.description.hasSuffix("passkey domains forget --all starts an empty one") == true)
            #expect(throws: ApprovalTableError.self) { try file.update { _ in } }
            #expect(try OwnerOnlyFile.read(file.url, limit: 16 << 20) == bytes, "a failed update leaves the file")
            try file.reset()
            #expect(try file.load() == ApprovalTable())
        }
    }
}
