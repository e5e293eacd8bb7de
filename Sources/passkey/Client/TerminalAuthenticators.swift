import ArgumentParser
import Basics
import CTAP2
import Foundation
import Hybrid
import HybridDriver
import PasskeyFilesIO
import PasskeyProvider
import PasskeyStoreIO
import Proximity
import ProximityIO
import PublicSuffix
import SecurityKeyDriver
import Synchronization
import TerminalIO
import WebAuthnClient
import WebAuthnClientDriver
import WebAuthnClientIO

extension HybridOptions {
    /// The authenticators as this terminal reaches them, for the browser service: the radio `mode`, the relay's
    /// TLS, and each step of a phone session as a status line on standard error. `thisComputer` is nil when the
    /// command never offers this computer's store (register, sign-in).
    func browserFactory(
        json: Bool, qrPNG: String?, thisComputer: (@Sendable () -> any ClientAuthenticator)? = nil
    ) -> BrowserAuthenticatorFactory {
        let options = self
        return BrowserAuthenticatorFactory(
            thisComputer: {
                guard let thisComputer else { throw CommandFailure("this command offers no passkey store") }
                return thisComputer()
            },
            phone: { onLinking in try options.phone(json: json, qrPNG: qrPNG, onLinking: onLinking) },
            linkedPhone: { phone, onGone, onUsed in try options.linkedPhone(phone, onGone: onGone, onUsed: onUsed) },
            securityKey: { spec in
                var options = SecurityKeyOptions()
                options.onStatus = { status in
                    if status == .touchNeeded { Terminal.shared.write("passkey: touch your security key\n") }
                }
                return SecurityKeyAuthenticator(spec, options: options)
            })
    }

    /// A phone over hybrid as these options reach it: the QR code on standard output (standard error when the output
    /// is JSON, and also into `qrPNG`), and each step of the session on standard error.
    func phone(
        json: Bool, qrPNG: String?, onLinking: BrowserAuthenticatorFactory.OnLinking?
    ) throws -> HybridPhoneAuthenticator {
        let mode = mode
        let status = StatusLine(enabled: true)
        return HybridPhoneAuthenticator(
            makeScanner: { () async throws(ProximityError) -> any ProximityScanner in
                try await Radio.scanner(for: mode)
            },
            tunnelServer: tunnelServer, timeouts: timeouts, environment: .system(tls: try tlsConfiguration()),
            progress: { event in
                switch event {
                case .showQRCode(let url):
                    ClientOptions.show(url: url, toStandardError: json, png: qrPNG)
                    status.say("waiting for a phone to scan the QR code and come near (Bluetooth: \(mode))")
                case .advertSeen(let routingID, let domain):
                    status.say("advert seen: the phone is near; relay \(domain.host), routing ID \(routingID)")
                case .tunnelConnected(let url):
                    status.say("tunnel connected: \(PhoneLines.host(of: url))")
                case .handshakeDone, .requestSent, .responseReceived:
                    Self.sayTunnelStep(event, on: status)
                case .contacting, .linkedPhoneNear:
                    break  // linked sessions only
                }
            },
            onLinking: onLinking)
    }

    /// The steps a QR session and a linked session share, once the tunnel is up.
    static func sayTunnelStep(_ event: HybridClientProgress, on status: StatusLine) {
        switch event {
        case .handshakeDone:
            status.say("handshake done: end-to-end encrypted")
        case .requestSent(let command):
            status.say("request sent: \(CTAPCommandName.name(command))")
        case .responseReceived(let code):
            status.say("answer received\(code == 0 ? "" : " (CTAP status 0x\(String(code, radix: 16)))")")
        default:
            break
        }
    }

    /// The linked `phone`, reached without a QR code through its relay (or --relay); `onGone` when the relay says
    /// the phone revoked the link.
    func linkedPhone(
        _ phone: LinkedPhone, onGone: @escaping @Sendable () -> Void, onUsed: @escaping @Sendable () -> Void
    ) throws -> LinkedPhoneAuthenticator {
        let name = phone.name
        let mode = mode
        let status = StatusLine(enabled: true)
        return LinkedPhoneAuthenticator(
            phone: phone, endpoint: tunnelServer.map(TunnelServerEndpoint.override),
            makeScanner: { () async throws(ProximityError) -> any ProximityScanner in
                try await Radio.scanner(for: mode)
            },
            timeouts: timeouts, environment: .system(tls: try tlsConfiguration()),
            progress: { event in
                switch event {
                case .contacting(let url):
                    status.say(
                        "asking the relay \(PhoneLines.host(of: url)) to wake the phone \"\(name.terminalSafe)\" "
                            + "(Bluetooth: \(mode))")
                case .tunnelConnected:
                    status.say("relay reached: waiting for the phone to come near")
                case .linkedPhoneNear:
                    status.say("the phone is near: handshake")
                case .handshakeDone, .requestSent, .responseReceived:
                    Self.sayTunnelStep(event, on: status)
                case .showQRCode, .advertSeen:
                    break  // QR sessions only
                }
            },
            onGone: onGone, onUsed: onUsed)
    }
}

extension SuffixListRelyingPartyIDChecker {
    /// The check over the system's Public Suffix List file (Docs/Client.md).
    static func fromSystemList(relatedOrigins: (any RelatedOriginsSource)?) throws -> Self {
        do {
            return Self(list: try PublicSuffixListFile.load(), relatedOrigins: relatedOrigins)
        } catch {
            throw CommandFailure("\(error)")
        }
    }
}

/// Keeps the store (and its lock) open from the moment a ceremony unlocks it until the command ends.
final class StoreHolder: Sendable {
    private let held = Mutex<(StoreLock, SQLiteCredentialStore)?>(nil)

    func keep(_ lock: StoreLock, _ store: SQLiteCredentialStore) { held.withLock { $0 = (lock, store) } }
}

/// This computer's passkeys as the platform authenticator: listed from the identity index without the passphrase;
/// unlocked (the passphrase asked for, or $PASSKEY_PASSPHRASE) only when the ceremony uses them.
enum LocalPasskeys {
    static func authenticator(store: StoreOptions, approval: ApprovalOptions, holder: StoreHolder)
        -> InProcessAuthenticator
    {
        let storeURL = store.url
        return InProcessAuthenticator(
            kind: .platform, transports: [.internal],
            listing: { relyingPartyID in listing(storeURL: storeURL, relyingPartyID: relyingPartyID) },
            opening: { () async throws(AuthenticatorTransportError) -> Authenticator in
                let opened: (StoreLock, SQLiteCredentialStore)
                do {
                    opened = try await store.openForServing(create: false)
                } catch {
                    throw AuthenticatorTransportError("this computer's passkey store: \(error)")
                }
                holder.keep(opened.0, opened.1)
                return Authenticator(
                    configuration: .platform,
                    environment: AuthenticatorEnvironment(
                        store: opened.1, userInteraction: approval.makeUserInteraction(store: opened.1),
                        reportError: { error in Terminal.shared.write("passkey: store error: \(error)\n") }))
            })
    }

    /// The credentials the identity index lists for `relyingPartyID`, in its order (rank, then most recently used);
    /// nil when the index is missing or damaged, so that the store is offered as "this computer" and unlocked, which
    /// rebuilds the index.
    static func listing(storeURL: URL, relyingPartyID: String) -> [CredentialMetadata]? {
        guard let index = try? CredentialIdentityIndex.read(forStore: storeURL) else { return nil }
        return index.identities(forRelyingParty: relyingPartyID).map { identity in
            CredentialMetadata(
                credentialID: identity.credentialID, userHandle: identity.userHandle, userName: identity.userName,
                userDisplayName: identity.userDisplayName, isDiscoverable: identity.isDiscoverable,
                created: identity.creationDate, lastUsed: identity.lastUsedDate)
        }
    }
}

/// The passwords saved for an RP ID, offered by `client get --password`: listed from the identity index without the
/// passphrase, the password itself read from the store only once the user picked its login.
enum LocalPasswords {
    static func listing(storeURL: URL, relyingPartyID: String) -> [PasswordLogin] {
        guard let index = try? CredentialIdentityIndex.read(forStore: storeURL) else { return [] }
        return index.passwords(forRelyingParty: relyingPartyID).compactMap { identity in
            guard let userName = identity.userName else { return nil }
            return PasswordLogin(id: identity.credentialID, userName: userName, service: identity.serviceIdentifier)
        }
    }

    /// Unlocks the store, reads the picked login's password, ranks the login first and prints
    /// `{"type":"password","id":USER,"password":PASSWORD}`.
    static func print(_ login: PasswordLogin, store options: StoreOptions, json: Bool) async throws {
        let store = try await options.open(create: false)
        defer { store.close() }
        guard let service = PasswordService(login.service),
            let credential = try store.passwords(service: service).first(where: { $0.login.id == login.id })
        else {
            throw CommandFailure("the saved password for \(login.userName.siteChosen) is gone or damaged")
        }
        try store.recordPasswordUse(credential.login)
        let line = PasswordPrompts.jsonObject([
            ("type", "password"), ("id", credential.login.userName), ("password", credential.password),
        ])
        if !json {
            Swift.print("signed in with the saved password for \(login.userName.siteChosen) at \(service.text)")
        }
        Swift.print(line)
    }
}
