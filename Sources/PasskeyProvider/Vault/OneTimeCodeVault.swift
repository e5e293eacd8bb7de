import Basics
import CTAP2
import Foundation
import PasskeyStoreIO

/// One-time codes (`passkey otp`, Docs/Passwords.md, "One-time codes"): adding a login's TOTP secret from an
/// `otpauth://totp/` URI or a bare base32 secret, showing its current code, and deleting it after asking. The secret
/// reaches this type as text the command read from standard input or a file, never from the command line.
public struct OneTimeCodeVault: Sendable {
    /// The unlocked store.
    public let store: SQLiteCredentialStore
    public let interface: any ProviderUserInterface
    public let mode: ApprovalMode
    public let canAsk: Bool

    public init(store: SQLiteCredentialStore, interface: any ProviderUserInterface, mode: ApprovalMode, canAsk: Bool) {
        self.store = store
        self.interface = interface
        self.mode = mode
        self.canAsk = canAsk
    }

    /// What `add` reads.
    public enum Input: Sendable {
        /// An `otpauth://totp/` URI: its secret, issuer, account name and parameters.
        case uri(String)
        /// A bare base32 secret (SHA-1, 6 digits, 30 seconds).
        case secret(String)
    }

    /// Reads `input`, before the store is unlocked: a bad URI or secret fails without asking for the passphrase.
    public static func read(_ input: Input) throws(ProviderError) -> OTPAuthURI {
        do throws(OTPAuthURI.Problem) {
            switch input {
            case .uri(let text): return try OTPAuthURI(parsing: text)
            case .secret(let text):
                return OTPAuthURI(
                    issuer: nil, accountName: "", secret: try OTPAuthURI.secret(text), parameters: .init())
            }
        } catch {
            throw ProviderError("cannot read the one-time code: \(error.message)")
        }
    }

    /// Adds the one-time code `parsed` (`read(_:)`) for `site`, for `user` (else the URI's account name); a login
    /// that has one already keeps it, and that is an error.
    public func add(
        _ parsed: OTPAuthURI, site: PasswordService, user: String?, at date: Date = Date()
    ) throws(ProviderError) -> SavedOneTimeCode {
        let userName = user ?? parsed.accountName
        let outcome = try storing { () throws(CredentialStoreError) in
            try store.addOneTimeCode(
                secret: parsed.secret, service: site, userName: userName, issuer: parsed.issuer,
                parameters: parsed.parameters, at: date)
        }
        guard outcome == .added else {
            throw ProviderError(
                "\(userName.quoted) at \(site.text) already has a one-time code; nothing saved",
                hint: "Delete it first with `passkey otp delete`.")
        }
        guard
            let saved = try codes(site: site, user: userName).first?.saved
        else { throw ProviderError("the one-time code for \(userName.quoted) at \(site.text) was not saved") }
        return saved
    }

    /// The current code of the one login at `site` (of `user` when given) and how many seconds it stays valid.
    public func code(site: PasswordService, user: String?, at date: Date = Date()) throws(ProviderError) -> (
        login: SavedOneTimeCode, code: String, secondsLeft: Int
    ) {
        let found = try codes(site: site, user: user)
        guard let chosen = found.first else {
            throw ProviderError("no one-time code for \(user.map { "\($0.quoted) at " } ?? "")\(site.text)")
        }
        guard found.count == 1 else {
            throw ProviderError(
                "\(site.text) has \(found.count) one-time codes",
                hint: "Choose one with --user: " + found.map(\.saved.userName.quoted).joined(separator: ", "))
        }
        let (code, left) = chosen.code(at: date)
        return (chosen.saved, code, left)
    }

    /// Every row, damaged ones included, of one site or all.
    public func entries(site: PasswordService?) throws(ProviderError) -> [OneTimeCodeEntry] {
        try storing { () throws(CredentialStoreError) in try store.oneTimeCodeEntries(service: site) }
    }

    /// Deletes the code of `user` at `site` (a damaged one too) after asking.
    public func delete(site: PasswordService, user: String) async throws(ProviderError) {
        let present = try entries(site: site).contains { entry in
            switch entry {
            case .intact(let code): code.saved.userName == user
            case .damaged(let damaged): damaged.userName == user
            }
        }
        guard present else { throw ProviderError("no one-time code for \(user.quoted) at \(site.text)") }
        switch await mode.answer(
            .deleteOneTimeCode(user: user, service: site.text), interface: interface, canAsk: canAsk)
        {
        case .unattended, .yes: break
        case .no: throw ProviderError("not confirmed; nothing changed", exitStatus: ExitStatus.declined)
        case nil: throw PasswordVault.needsConfirmation
        }
        let deleted = try storing { () throws(CredentialStoreError) in
            try store.deleteOneTimeCode(service: site, userName: user)
        }
        guard deleted else { throw ProviderError("no one-time code for \(user.quoted) at \(site.text)") }
    }

    private func codes(site: PasswordService, user: String?) throws(ProviderError) -> [OneTimeCodeCredential] {
        var found = try storing { () throws(CredentialStoreError) in try store.oneTimeCodes(service: site) }
        if let user { found = found.filter { $0.saved.userName == user } }
        return found
    }

    private func storing<Result>(_ body: () throws(CredentialStoreError) -> Result) throws(ProviderError) -> Result {
        do {
            return try body()
        } catch {
            throw ProviderError(error.message)
        }
    }
}
