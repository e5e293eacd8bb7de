import AssociatedDomains
import AssociatedDomainsIO
import CTAP2
import Foundation
import PasskeyStoreIO

/// The saved passwords (`passkey password`, Docs/Passwords.md): saving, replacing, deleting and giving a login to an
/// app, with what is asked first. A different saved password is never replaced, and nothing is deleted or given to
/// an app, without a yes; unattended mode (`--yes`) answers yes and says so. An app (`--app`) acts only for a domain
/// whose approval table entry approved it for webcredentials, and that is checked before anything else, so an app
/// learns nothing about a domain that did not approve it.
public struct PasswordVault: Sendable {
    /// `request`'s exit status when nothing can be given: not approved, or nothing saved.
    public static let notFoundExitStatus: Int32 = ExitStatus.notFound

    /// The unlocked store.
    public let store: SQLiteCredentialStore
    public let interface: any ProviderUserInterface
    public let mode: ApprovalMode
    /// Whether the interface can ask at all: without it, a question fails at once saying how to answer it.
    public let canAsk: Bool
    /// Where `PASSKEY_PASSWORD` is read from.
    public let environment: [String: String]
    /// The approval table `passkey domains check` keeps (`PasskeyFiles.domainApprovals` unless given).
    public let approvalTable: URL

    public init(
        store: SQLiteCredentialStore, interface: any ProviderUserInterface, mode: ApprovalMode, canAsk: Bool,
        environment: [String: String], approvalTable: URL
    ) {
        self.store = store
        self.interface = interface
        self.mode = mode
        self.canAsk = canAsk
        self.environment = environment
        self.approvalTable = approvalTable
    }

    /// Where the password to save comes from.
    public enum NewPassword: Sendable {
        /// `PASSKEY_PASSWORD`, else asked twice without echo.
        case ask
        /// Made by the caller (`--generate`).
        case given(String)
    }

    /// What saving did.
    public enum Saved: Hashable, Sendable {
        case added
        /// An app saved a new login without asking.
        case addedByApp
        case changed
        case unchanged
    }

    // MARK: Saving

    /// Saves a password for `user` at `service`, as `app` would (`SecAddSharedWebCredential`) when given: a new login
    /// is saved without asking; replacing a different password asks first.
    public func add(
        service: PasswordService, user: String, app: String? = nil, password source: NewPassword
    ) async throws(ProviderError) -> Saved {
        let existing = try storing { () throws(CredentialStoreError) in
            try store.passwordEntry(service: service, userName: user)
        }
        if case .damaged = existing {
            throw ProviderError(
                "the saved password for \(user.quoted) at \(service.text) fails its integrity check",
                hint: "Delete it with `passkey password delete`, then save it again.")
        }
        let current: PasswordCredential? = if case .intact(let credential) = existing { credential } else { nil }
        guard let app else {
            let password = try await newPassword(source)
            if let current, !current.hasPassword(password) {
                try await confirm(.replacePassword(user: user, service: service.text))
            }
            switch try save(password, user: user, service: service) {
            case .added: return .added
            case .changed: return .changed
            case .unchanged: return .unchanged
            }
        }
        let table = try approvals()
        let domain = service.hostAndPort ?? service.text
        // Checked before the password is asked for: an app that may not save here learns so without typing anything.
        guard SharedWebCredentials.isApproved(app: app, domain: domain, approvals: table) else {
            throw ProviderError(
                "\(app.quoted) is not approved for webcredentials at \(domain); nothing saved",
                hint: "The domain's apple-app-site-association file must list the app (passkey domains check).")
        }
        let password = try await newPassword(source)
        switch SharedWebCredentials.decideAdd(
            app: app, domain: domain, approvals: table, existing: current, password: password)
        {
        case .saveSilently:
            try save(password, user: user, service: service)
            return .addedByApp
        case .unchanged:
            return .unchanged
        case .askToChange:
            try await confirm(.appChangesPassword(app: app, user: user, service: service.text))
            try save(password, user: user, service: service)
            return .changed
        case .notApproved, .askToDelete, .nothingToDelete:
            throw ProviderError("\(app.quoted) is not approved for webcredentials at \(domain)")
        }
    }

    // MARK: Reading and deleting

    /// The password of the one login at `service` (of `user` when given), its use recorded so it ranks first.
    public func get(service: PasswordService, user: String?) throws(ProviderError) -> String {
        var logins = try storing { () throws(CredentialStoreError) in try store.passwords(service: service) }
        if let user { logins = logins.filter { $0.login.userName == user } }
        guard let chosen = logins.first else {
            throw ProviderError("no saved password for \(user.map { "\($0.quoted) at " } ?? "")\(service.text)")
        }
        guard logins.count == 1 else {
            throw ProviderError(
                "\(service.text) has \(logins.count) saved logins",
                hint: "Choose one with --user: " + logins.map(\.login.userName.quoted).joined(separator: ", "))
        }
        try storing { () throws(CredentialStoreError) in _ = try store.recordPasswordUse(chosen.login) }
        return chosen.password
    }

    /// Deletes the login of `user` at `service` (a damaged one too) after asking; as `app` would when given.
    public func delete(service: PasswordService, user: String, app: String? = nil) async throws(ProviderError) {
        let what = "\(user.quoted) at \(service.text)"
        var question = ProviderQuestion.deletePassword(user: user, service: service.text)
        // An app learns nothing about a domain that did not approve it: the approval is checked first.
        if let app {
            let domain = service.hostAndPort ?? service.text
            let table = try approvals()
            guard SharedWebCredentials.isApproved(app: app, domain: domain, approvals: table) else {
                throw ProviderError("\(app.quoted) is not approved for webcredentials at \(domain); nothing deleted")
            }
            question = .appDeletesPassword(app: app, user: user, service: service.text)
        }
        let entry = try storing { () throws(CredentialStoreError) in
            try store.passwordEntry(service: service, userName: user)
        }
        guard entry != nil else { throw ProviderError("no saved password for \(what)") }
        try await confirm(question)
        let deleted = try storing { () throws(CredentialStoreError) in
            try store.deletePassword(service: service, userName: user)
        }
        guard deleted else { throw ProviderError("no saved password for \(what)") }
    }

    // MARK: Giving a login to an app

    /// What `request` gives the app.
    public struct SharedLogin: Hashable, Sendable {
        /// The domain (`host[:port]`) of the login.
        public var server: String
        public var account: String
        public var password: String

        public init(server: String, account: String, password: String) {
            self.server = server
            self.account = account
            self.password = password
        }
    }

    /// `SecRequestSharedWebCredential`: offers `app` the logins of the domains that approved it (of `domain` alone
    /// when given) and returns the one the person chooses. Not approved, nothing saved and a refusal all end the
    /// same way (`notFound`), so an app cannot learn where the person has accounts.
    public func request(app: String, domain: String?) async throws(ProviderError) -> SharedLogin {
        // Whether the person can be asked is settled before anything is decided: both not-found cases ask the same
        // questions and end the same way.
        guard mode.unattended || canAsk else { throw Self.needsConfirmation }
        let table = try approvals()
        let saved = try storing { () throws(CredentialStoreError) in try store.passwords() }
        let offered = SharedWebCredentials.offered(
            to: app, domain: domain, approvals: table, logins: saved.map(\.login))
        guard !offered.isEmpty else { throw Self.notFound }
        let choice = ChoiceRequest.sharedLogin(
            app: app, logins: offered.map { SavedLoginSummary(user: $0.userName, service: $0.service.text) })
        let index: Int
        if let reason = mode.unattendedReason {
            interface.report(.unattendedApprovalOn(reason: reason))
            interface.report(.autoChose(choice, index: 0))
            index = 0
        } else {
            // Refusing looks to the app as if nothing were saved.
            guard case .given(let chosen) = await interface.choose(choice), offered.indices.contains(chosen) else {
                throw Self.notFound
            }
            index = chosen
        }
        let login = offered[index]
        guard let credential = saved.first(where: { $0.login.id == login.id }) else { throw Self.notFound }
        try storing { () throws(CredentialStoreError) in _ = try store.recordPasswordUse(login) }
        return SharedLogin(
            server: login.service.hostAndPort ?? login.service.text, account: login.userName,
            password: credential.password)
    }

    // MARK: Errors

    public static var notFound: ProviderError {
        ProviderError("no shared web credential for this app", exitStatus: notFoundExitStatus)
    }

    public static var needsConfirmation: ProviderError {
        ProviderError("this needs your confirmation", hint: "Run passkey in a terminal, or pass --yes (tests only).")
    }

    // MARK: Steps

    /// The approval table; a missing one approves nothing, a damaged one is an error, never read as "not approved".
    func approvals() throws(ProviderError) -> any DomainApprovals {
        do {
            return ApprovalTableApprovals(try ApprovalTableFile(url: approvalTable).load())
        } catch {
            throw ProviderError("\(error)")
        }
    }

    /// Asks `question`; returns on yes, throws otherwise. Unattended mode answers yes and reports it.
    func confirm(_ question: ProviderQuestion) async throws(ProviderError) {
        switch await mode.answer(question, interface: interface, canAsk: canAsk) {
        case .unattended, .yes: return
        case .no: throw ProviderError("not confirmed; nothing changed", exitStatus: ExitStatus.declined)
        case nil: throw Self.needsConfirmation
        }
    }

    /// The password to save: given, else `PASSKEY_PASSWORD`, else asked twice without echo (compared in constant
    /// time).
    func newPassword(_ source: NewPassword) async throws(ProviderError) -> String {
        if case .given(let password) = source { return password }
        if let fromEnvironment = environment["PASSKEY_PASSWORD"] {
            guard !fromEnvironment.isEmpty else { throw ProviderError("PASSKEY_PASSWORD is set but empty") }
            return fromEnvironment
        }
        guard canAsk else {
            throw ProviderError("no password given", hint: "Set PASSKEY_PASSWORD, or run passkey in a terminal.")
        }
        guard case .given(let first) = await interface.secret(.newPassword(confirming: false)), !first.isEmpty else {
            throw ProviderError("no password given; nothing saved")
        }
        guard case .given(let second) = await interface.secret(.newPassword(confirming: true)),
            PasswordCredential.sameSecret(first, second)
        else { throw ProviderError("the passwords do not match; nothing saved") }
        return first
    }

    @discardableResult
    func save(_ password: String, user: String, service: PasswordService) throws(ProviderError) -> PasswordSaveOutcome {
        try storing { () throws(CredentialStoreError) in
            try store.savePassword(password, userName: user, service: service)
        }
    }

    /// Runs a store call, its failure as a `ProviderError` with the same message.
    func storing<Result>(_ body: () throws(CredentialStoreError) -> Result) throws(ProviderError) -> Result {
        do {
            return try body()
        } catch {
            throw ProviderError(error.message)
        }
    }
}

/// One login offered to an app: who and where, never the password.
public struct SavedLoginSummary: Hashable, Sendable {
    public var user: String
    public var service: String

    public init(user: String, service: String) {
        self.user = user
        self.service = service
    }
}

extension String {
    /// A name a site, an app or a person chose, in double quotes with `"` and `\` escaped, so that it cannot end its
    /// quotes and pass for the rest of a message (the terminal escapes control characters when it prints).
    var quoted: String {
        "\"" + replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }
}
