import Foundation
import PasskeyFilesIO
import PasskeyProvider
import PasskeyStoreIO
import TestSupport
import Testing

/// `PasswordVault` in process: what is asked before a password is saved, replaced, deleted or given to an app, the
/// approval table's rules for `--app`, and unattended mode. A store in a temporary directory, a scripted person.
struct VaultPasswordTests {
    static let app = "ABCDE12345.com.example.app"
    static let example = PasswordService("example.com")!

    /// A store, its approval table beside it, and the person.
    typealias World = TestStore

    @Test func aNewLoginIsSavedWithoutAskingAndReplacingADifferentPasswordAsksFirst() async throws {
        let world = try World()
        let quiet = ScriptedPerson()
        #expect(
            try await world.vault(quiet).add(service: Self.example, user: "alice", password: .given("one")) == .added)
        #expect(
            try await world.vault(quiet).add(service: Self.example, user: "alice", password: .given("one"))
                == .unchanged)
        #expect(quiet.prompts.isEmpty)

        let refusing = ScriptedPerson([.no])
        let error = await #expect(throws: ProviderError.self) {
            try await world.vault(refusing).add(service: Self.example, user: "alice", password: .given("two"))
        }
        #expect(error?.message == "not confirmed; nothing changed")
        #expect(error?.exitStatus == ExitStatus.declined)
        #expect(refusing.prompts == [.confirm(.replacePassword(user: "alice", service: "example.com"))])
        #expect(try world.saved() == ["alice@example.com": "one"])

        let agreeing = ScriptedPerson([.yes])
        #expect(
            try await world.vault(agreeing).add(service: Self.example, user: "alice", password: .given("two"))
                == .changed)
        #expect(try world.saved() == ["alice@example.com": "two"])
        #expect(agreeing.unusedReplies == 0 && agreeing.unexpectedPrompts == 0)
    }

    @Test func withNobodyToAskNothingIsReplacedAndUnattendedModeSaysWhatItApproved() async throws {
        let world = try World()
        _ = try await world.vault(ScriptedPerson()).add(service: Self.example, user: "alice", password: .given("one"))
        let nobody = ScriptedPerson()
        let error = await #expect(throws: ProviderError.self) {
            try await world.vault(nobody, canAsk: false).add(
                service: Self.example, user: "alice", password: .given("two"))
        }
        #expect(error?.message == "this needs your confirmation")
        #expect(error?.hint == "Run passkey in a terminal, or pass --yes (tests only).")
        #expect(try world.saved() == ["alice@example.com": "one"])

        let unattended = ScriptedPerson()
        let saved = try await world.vault(unattended, yes: true, canAsk: false).add(
            service: Self.example, user: "alice", password: .given("two"))
        #expect(saved == .changed)
        #expect(unattended.prompts.isEmpty)
        guard case .autoAnswered(.replacePassword("alice", "example.com"))? = unattended.events.first else {
            Issue.record("no auto-approval reported: \(unattended.events)")
            return
        }
    }

    @Test func aPasswordToSaveIsAskedTwiceUnlessTheEnvironmentGivesIt() async throws {
        let world = try World()
        let mismatched = ScriptedPerson([.type("first"), .type("second")])
        let error = await #expect(throws: ProviderError.self) {
            try await world.vault(mismatched).add(service: Self.example, user: "alice", password: .ask)
        }
        #expect(error?.message == "the passwords do not match; nothing saved")
        #expect(
            mismatched.prompts == [.secret(.newPassword(confirming: false)), .secret(.newPassword(confirming: true))])
        #expect(try world.saved().isEmpty)

        let empty = ScriptedPerson([.type("")])
        let none = await #expect(throws: ProviderError.self) {
            try await world.vault(empty).add(service: Self.example, user: "alice", password: .ask)
        }
        #expect(none?.message == "no password given; nothing saved")

        let nobody = ScriptedPerson()
        let unasked = await #expect(throws: ProviderError.self) {
            try await world.vault(nobody, canAsk: false).add(service: Self.example, user: "alice", password: .ask)
        }
        #expect(unasked?.message == "no password given")
        #expect(unasked?.hint == "Set PASSKEY_PASSWORD, or run passkey in a terminal.")

        let fromEnvironment = ScriptedPerson()
        _ = try await world.vault(fromEnvironment, canAsk: false, environment: ["PASSKEY_PASSWORD": "env-Secret-1"])
            .add(service: Self.example, user: "alice", password: .ask)
        #expect(fromEnvironment.prompts.isEmpty)
        #expect(try world.saved() == ["alice@example.com": "env-Secret-1"])

        let typed = ScriptedPerson([.type("typed-Secret"), .type("typed-Secret"), .yes])
        _ = try await world.vault(typed).add(service: Self.example, user: "alice", password: .ask)
        #expect(try world.saved() == ["alice@example.com": "typed-Secret"])
    }

    @Test func anAppSavesOnlyWhereApprovedSilentlyWhenNewAndAskingToChange() async throws {
        let world = try World()
        try world.approve([
            ("example.com", "approved", "webcredentials"), ("denied.example", "denied", "webcredentials"),
            ("links.example", "approved", "applinks"),
        ])
        // Not approved: refused before the password is asked for.
        for domain in ["other.example", "denied.example", "links.example"] {
            let person = ScriptedPerson()
            let error = await #expect(throws: ProviderError.self) {
                try await world.vault(person).add(
                    service: PasswordService(domain)!, user: "alice", app: Self.app, password: .ask)
            }
            #expect(error?.message == "\"\(Self.app)\" is not approved for webcredentials at \(domain); nothing saved")
            #expect(
                error?.hint == "The domain's apple-app-site-association file must list the app (passkey domains check)."
            )
            #expect(person.prompts.isEmpty)
        }
        #expect(try world.saved().isEmpty)

        let quiet = ScriptedPerson()
        let added = try await world.vault(quiet).add(
            service: Self.example, user: "alice", app: Self.app, password: .given("one"))
        #expect(added == .addedByApp && quiet.prompts.isEmpty)

        let refusing = ScriptedPerson([.no])
        await #expect(throws: ProviderError("not confirmed; nothing changed", exitStatus: ExitStatus.declined)) {
            try await world.vault(refusing).add(
                service: Self.example, user: "alice", app: Self.app, password: .given("two"))
        }
        #expect(
            refusing.prompts == [.confirm(.appChangesPassword(app: Self.app, user: "alice", service: "example.com"))])
        #expect(try world.saved() == ["alice@example.com": "one"])
        let changed = try await world.vault(ScriptedPerson([.yes])).add(
            service: Self.example, user: "alice", app: Self.app, password: .given("two"))
        #expect(changed == .changed)
        #expect(try world.saved() == ["alice@example.com": "two"])
    }

    @Test func deletingAsksAndAnAppDeletesOnlyWhereApproved() async throws {
        let world = try World()
        try world.approve([("example.com", "approved", "webcredentials")])
        await #expect(throws: ProviderError("no saved password for \"alice\" at example.com")) {
            try await world.vault(ScriptedPerson()).delete(service: Self.example, user: "alice")
        }
        _ = try await world.vault(ScriptedPerson()).add(service: Self.example, user: "alice", password: .given("one"))
        _ = try await world.vault(ScriptedPerson()).add(
            service: PasswordService("other.example")!, user: "alice", password: .given("two"))

        let refusing = ScriptedPerson([.no])
        await #expect(throws: ProviderError("not confirmed; nothing changed", exitStatus: ExitStatus.declined)) {
            try await world.vault(refusing).delete(service: Self.example, user: "alice")
        }
        #expect(refusing.prompts == [.confirm(.deletePassword(user: "alice", service: "example.com"))])

        let unapproved = ScriptedPerson([.yes])
        await #expect(
            throws: ProviderError(
                "\"\(Self.app)\" is not approved for webcredentials at other.example; nothing deleted")
        ) {
            try await world.vault(unapproved).delete(
                service: PasswordService("other.example")!, user: "alice", app: Self.app)
        }
        #expect(unapproved.prompts.isEmpty)
        #expect(try world.saved().count == 2)

        let agreeing = ScriptedPerson([.yes])
        try await world.vault(agreeing).delete(service: Self.example, user: "alice", app: Self.app)
        #expect(
            agreeing.prompts == [.confirm(.appDeletesPassword(app: Self.app, user: "alice", service: "example.com"))])
        #expect(try world.saved() == ["alice@other.example": "two"])
    }

    @Test func anAppIsOfferedOnlyApprovedLoginsAndEveryNoLooksTheSame() async throws {
        let world = try World()
        try world.approve([
            ("example.com", "approved", "webcredentials"), ("empty.example", "approved", "webcredentials"),
            ("denied.example", "denied", "webcredentials"), ("links.example", "approved", "applinks"),
        ])
        for (domain, user) in [("example.com", "alice"), ("denied.example", "bob"), ("links.example", "carol")] {
            _ = try await world.vault(ScriptedPerson()).add(
                service: PasswordService(domain)!, user: user, password: .given("\(user)-Secret"))
        }
        let person = ScriptedPerson([.pick(0)])
        let given = try await world.vault(person).request(app: Self.app, domain: nil)
        #expect(given == PasswordVault.SharedLogin(server: "example.com", account: "alice", password: "alice-Secret"))
        #expect(
            person.prompts == [
                .choose(.sharedLogin(app: Self.app, logins: [SavedLoginSummary(user: "alice", service: "example.com")]))
            ])

        // Not approved, approved but empty, refused, and nobody to ask: one answer, exit status 4 but the last.
        for domain in ["empty.example", "denied.example", "links.example", "unknown.example"] {
            await #expect(throws: PasswordVault.notFound) {
                try await world.vault(ScriptedPerson(), yes: true).request(app: Self.app, domain: domain)
            }
        }
        #expect(PasswordVault.notFound.exitStatus == 4)
        await #expect(throws: PasswordVault.notFound) {
            try await world.vault(ScriptedPerson([.no])).request(app: Self.app, domain: nil)
        }
        await #expect(throws: PasswordVault.needsConfirmation) {
            try await world.vault(ScriptedPerson(), canAsk: false).request(app: Self.app, domain: nil)
        }

        // Unattended: the first login, reported.
        let unattended = ScriptedPerson()
        let first = try await world.vault(unattended, yes: true).request(app: Self.app, domain: "example.com")
        #expect(first.account == "alice" && unattended.prompts.isEmpty)
        guard case .autoChose(.sharedLogin, 0)? = unattended.events.last else {
            Issue.record("no auto-choice reported: \(unattended.events)")
            return
        }

        // A damaged table is an error, never "not approved".
        _ = try world.directory.write(Array("{not json".utf8), to: "domains.json")
        let damaged = await #expect(throws: ProviderError.self) {
            try await world.vault(ScriptedPerson(), yes: true).request(app: Self.app, domain: nil)
        }
        #expect(damaged?.message.contains("approval table") == true)
        #expect(damaged?.exitStatus == 1)
    }

    @Test func getGivesTheOneLoginOrSaysHowToChoose() async throws {
        let world = try World()
        let vault = world.vault(ScriptedPerson())
        _ = try await vault.add(service: Self.example, user: "alice", password: .given("alice-Secret"))
        _ = try await vault.add(service: Self.example, user: "bob", password: .given("bob-Secret"))
        let several = #expect(throws: ProviderError.self) { try vault.get(service: Self.example, user: nil) }
        #expect(several?.message == "example.com has 2 saved logins")
        #expect(several?.hint?.hasPrefix("Choose one with --user: ") == true)
        #expect(try vault.get(service: Self.example, user: "bob") == "bob-Secret")
        #expect(throws: ProviderError("no saved password for \"carol\" at example.com")) {
            try vault.get(service: Self.example, user: "carol")
        }
    }
}

extension TestStore {
    func vault(
        _ person: ScriptedPerson, yes: Bool = false, canAsk: Bool = true, environment: [String: String] = [:]
    ) -> PasswordVault {
        PasswordVault(
            store: store, interface: person, mode: ApprovalMode(yes: yes, environment: [:]), canAsk: canAsk,
            environment: environment,
            approvalTable: PasskeyFiles(store: directory.url("passkeys.sqlite")).domainApprovals)
    }

    /// Writes the table as `passkey domains check` would: `(domain, state, service)` for `VaultPasswordTests.app`.
    func approve(_ entries: [(String, String, String)]) throws {
        let rows = entries.map { domain, state, service in
            """
            {"entitlement": "\(service):\(domain)", "app": "\(VaultPasswordTests.app)", "state": "\(state)", \
            "reason": "checked in the test", "checked": "2025-11-24T12:00:00Z", \
            "url": "https://\(domain)/.well-known/apple-app-site-association", "status": 200}
            """
        }
        let json = "{\"version\": 1, \"entries\": [\(rows.joined(separator: ","))], \"files\": {}}"
        _ = try directory.write(Array(json.utf8), to: "domains.json")
    }

    /// Every saved login and its password.
    func saved() throws -> [String: String] {
        Dictionary(
            uniqueKeysWithValues: try store.passwords().map {
                ("\($0.login.userName)@\($0.login.service.text)", $0.password)
            })
    }
}
