import ArgumentParser
import Basics
import CTAP2
import JSON
import WebAuthnClientDriver
import Foundation
import Hybrid
import HybridDriver
import PasskeyStoreIO
import Proximity
import ProximityIO
import PublicSuffix
import SecurityKeyDriver
import Synchronization
import WebAuthnClient
import WebAuthnClientIO
import PasskeyFilesIO

extension CredentialMediation: ExpressibleByArgument {}
extension PublicKeyCredentialHint: ExpressibleByArgument {}

/// What `client create` and `client get` share: where the options come from, the origin, the authenticators, and how
/// the result is printed.
struct WebAuthnClientOptions: ParsableArguments {
    @Option(
        name: .customLong("options"),
        help: ArgumentHelp(
            "The relying party's options JSON (PublicKeyCredentialCreationOptionsJSON or …RequestOptionsJSON, bare "
                + "or inside {\"publicKey\": …}); - reads standard input.", valueName: "file|-"))
    var optionsPath: String

    @Option(help: ArgumentHelp("The origin of the page asking, for example https://example.com.", valueName: "url"))
    var origin: String

    @Option(
        help: ArgumentHelp(
            "Order the choices by these hints (repeatable); they win over transports and authenticatorAttachment.",
            valueName: "security-key|client-device|hybrid"))
    var hint: [PublicKeyCredentialHint] = []

    @Option(
        name: .customLong("security-key"),
        help: ArgumentHelp(
            "Also offer a security key over CTAPHID: hidraw:/dev/hidrawN, udp:HOST:PORT, or auto (the one FIDO "
                + "hidraw device). Its PIN comes from $PASSKEY_CLIENT_PIN or the terminal.",
            valueName: "spec"))
    var securityKey: String?

    @Flag(help: "Do not offer a phone (hybrid): only this computer's passkeys and a security key.")
    var noPhone = false

    @OptionGroup var linking: ClientLinkOptions

    @Flag(help: "Print exactly the credential's toJSON() on one line, and nothing else on standard output.")
    var json = false

    @Option(help: ArgumentHelp("Also write the phone's QR code to this PNG file.", valueName: "file")) var qrPNG:
        String?

    @OptionGroup var store: StoreOptions
    @OptionGroup var approval: ApprovalOptions
    @OptionGroup var hybrid: HybridOptions
    @OptionGroup var appAssociation: AppAssociationOptions

    /// The largest options file read: well above what any relying party sends, and what the engine refuses beyond.
    static let maximumOptionsBytes = 1 << 20

    func validate() throws {
        if noPhone && (linking.link || linking.linked != nil) {
            throw ValidationError("--link and --linked need a phone: drop --no-phone.")
        }
        if let securityKey {
            do {
                _ = try SecurityKeySpec(parsing: securityKey)
            } catch {
                throw ValidationError("--security-key: \(error)")
            }
        }
    }

    /// The options text, from the file or standard input; at most one byte more than the engine reads, so that it
    /// reports the size itself.
    func readOptions() throws(CommandFailure) -> [UInt8] {
        let handle: FileHandle
        if optionsPath == "-" {
            handle = FileHandle.standardInput
        } else {
            guard let file = FileHandle(forReadingAtPath: optionsPath) else {
                throw CommandFailure("cannot read the options file \(optionsPath.terminalSafe)")
            }
            handle = file
        }
        defer { if optionsPath != "-" { try? handle.close() } }
        var bytes: [UInt8] = []
        while bytes.count <= Self.maximumOptionsBytes {
            guard let chunk = try? handle.read(upToCount: 64 * 1024), !chunk.isEmpty else { break }
            bytes += chunk
        }
        return Array(bytes.prefix(Self.maximumOptionsBytes + 1))
    }

    /// The engine over this computer's store (when it exists), a phone and the security key asked for.
    func makeEngine(ceremony: ClientCeremony, holder: StoreHolder) throws -> ClientEngine {
        let interface = TerminalClientInterface(
            unattended: approval.unattended,
            pin: ClientPINSource.provider(environment: ProcessInfo.processInfo.environment))
        var authenticators: [any ClientAuthenticator] = []
        if FileManager.default.fileExists(atPath: store.url.path) {
            authenticators.append(LocalPasskeys.authenticator(store: store, approval: approval, holder: holder))
        }
        if !noPhone {
            let book = linking.book(store: store)
            if let name = linking.linked {
                authenticators.append(try hybrid.linkedPhone(named: name, book: book))
            } else {
                authenticators.append(try hybrid.phone(json: json, qrPNG: qrPNG, rememberIn: linking.link ? book : nil))
            }
        }
        if let securityKey, let spec = try? SecurityKeySpec(parsing: securityKey) {
            var options = SecurityKeyOptions()
            options.onStatus = { status in
                if status == .touchNeeded { Terminal.shared.write("passkey: touch your security key\n") }
            }
            authenticators.append(SecurityKeyAuthenticator(spec, options: options))
        }
        return ClientEngine(
            environment: ClientEnvironment(
                authenticators: authenticators, userInterface: interface,
                relyingPartyIDChecker: try SuffixListRelyingPartyIDChecker.fromSystemList(
                    relatedOrigins: HTTPSRelatedOriginsSource())))
    }

    /// Prints the credential: its `toJSON()` alone with `--json`, else a summary and the JSON laid out.
    func printCredential(json credentialJSON: [UInt8], pretty: [UInt8], summary: [String]) {
        if json {
            FileHandle.standardOutput.write(Data(credentialJSON + Array("\n".utf8)))
        } else {
            let text = summary.map { $0 + "\n" }.joined() + String(decoding: pretty, as: UTF8.self) + "\n"
            FileHandle.standardOutput.write(Data(text.utf8))
        }
    }

    /// Runs a ceremony, turning its `ClientError` into one line on standard error and the exception's exit status.
    /// Ctrl-C cancels it, which the engine reports as `AbortError`, as a page's AbortSignal would.
    func run<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let task = Task { try await body() }
        signal(SIGINT, SIG_IGN)
        let interrupt = DispatchSource.makeSignalSource(signal: SIGINT)
        interrupt.setEventHandler { task.cancel() }
        interrupt.resume()
        defer {
            interrupt.cancel()
            signal(SIGINT, SIG_DFL)
        }
        do {
            return try await task.value
        } catch let error as ClientError {
            Terminal.shared.write("passkey: \(error.description.terminalSafe)\n")
            throw ExitCode(error.exitStatus)
        }
    }
}

extension HybridOptions {
    /// A phone over hybrid as these options reach it: the QR code on standard output (standard error when the output
    /// is JSON, and also into `qrPNG`), and each step of the session on standard error.
    func phone(json: Bool, qrPNG: String?, rememberIn book: LinkedPhoneBook? = nil) throws -> HybridPhoneAuthenticator {
        let mode = mode
        let status = StatusLine(enabled: true)
        var onLinking: (@Sendable (LinkingInfo, TunnelServerBaseURL) -> Void)? = nil
        if let book {
            onLinking = { linking, relay in ClientLinking.remember(linking, relay: relay, book: book) }
        }
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
                    status.say("tunnel connected: \(Passkey.Scan.host(of: url))")
                case .handshakeDone, .requestSent, .responseReceived:
                    Self.sayTunnelStep(event, on: status)
                case .contacting, .linkedPhoneNear:
                    break  // linked sessions only
                }
            },
            onLinking: onLinking)
    }

    /// The phone called `name` in `book`, reached without a QR code through its relay (or --relay); a 410 from the
    /// relay forgets it.
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

    func linkedPhone(named name: String, book: LinkedPhoneBook) throws -> LinkedPhoneAuthenticator {
        let phones: [LinkedPhone]
        do {
            phones = try book.load()
        } catch {
            throw CommandFailure("\(error)")
        }
        guard let phone = phones.first(where: { $0.name == name }) else {
            throw CommandFailure(
                "no linked phone called \(name.terminalSafe) in \(book.url.path)",
                hint: phones.isEmpty
                    ? "Link one: a QR session with --link, answered by `passkey scan --link`."
                    : "Linked phones: " + phones.map(\.name.terminalSafe).joined(separator: ", "))
        }
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
                        "asking the relay \(Passkey.Scan.host(of: url)) to wake the phone \"\(name.terminalSafe)\" "
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
            onGone: {
                _ = try? book.forget(name)
                Terminal.shared.write(
                    "passkey: the phone \"\(name.terminalSafe)\" revoked this link (the relay says it is gone); "
                        + "forgot it (\(book.url.path))\n")
            },
            onUsed: { try? book.used(name, now: Date()) })
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

/// The browser's dialogs on the terminal: the chooser, the attestation question, the security key's PIN and
/// progress, all on standard error. With `--yes` (tests and CI) the first choice is taken and said so.
struct TerminalClientInterface: ClientUserInterface {
    let unattended: Bool
    let pin: PINProvider

    func choose(_ prompt: ChoicePrompt) async -> Int? {
        let terminal = Terminal.shared
        let verb = prompt.ceremony == .create ? "Create a passkey" : "Sign in"
        var header = "\(prompt.relyingPartyID.terminalSafe): \(verb)"
        if let userName = prompt.userName { header += " for \(userName.siteChosen)" }
        if prompt.isConditional { header += " (passkeys offered as autofill)" }
        terminal.write(header + ":\n")
        for (index, choice) in prompt.choices.enumerated() {
            terminal.write("  \(index + 1)) \(Self.describe(choice))\n")
        }
        if unattended {
            terminal.write("passkey: auto-chose 1 (unattended approval)\n")
            return prompt.choices.isEmpty ? nil : 0
        }
        terminal.write("Choose 1-\(prompt.choices.count), or press Enter to cancel: ")
        guard case .line(let answer) = await terminal.readLine(timeout: .seconds(120)),
            let choice = Int(answer.trimmingCharacters(in: .whitespaces)), (1...prompt.choices.count).contains(choice)
        else { return nil }
        return choice - 1
    }

    static func describe(_ choice: ClientChoice) -> String {
        switch choice {
        case .account(let account, let kind):
            var text = (account.userName ?? "an account without a name").siteChosen
            if let display = account.userDisplayName, display != account.userName { text += " (\(display.siteChosen))" }
            text += kind == .platform ? ", on this computer" : ""
            if let created = account.created {
                text += ", created " + created.formatted(.iso8601.year().month().day())
            }
            return text
        case .thisComputer: return "This computer (the passkey store)"
        case .phone: return "Use a phone or tablet (shows a QR code)"
        case .securityKey: return "Use a security key"
        case .password(let login):
            return "\(login.userName.siteChosen), saved password for \(login.service.terminalSafe)"
        }
    }

    func confirm(_ question: ClientQuestion) async -> Bool {
        let terminal = Terminal.shared
        switch question {
        case .revealSecurityKeyModel(let relyingPartyID):
            let text = "\(relyingPartyID.terminalSafe) wants to see the make and model of your security key."
            if unattended {
                terminal.write("passkey: auto-approved: \(text)\n")
                return true
            }
            terminal.write(text + " Allow? [y/N] ")
            guard case .line(let answer) = await terminal.readLine(timeout: .seconds(120)) else { return false }
            return ["y", "yes"].contains(answer.trimmingCharacters(in: .whitespaces).lowercased())
        }
    }

    func collectPIN(_ request: PINRequest) async -> String? { await pin(request) }

    func notify(_ event: ClientEvent) async {
        switch event {
        case .contacting(.securityKey): Terminal.shared.write("passkey: opening the security key\n")
        case .contacting(.platform): Terminal.shared.write("passkey: using this computer's passkey store\n")
        case .contacting(.hybrid), .waitingForAuthenticator: break
        }
    }
}

extension Passkey.Client {
    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "navigator.credentials.create(): relying party options JSON in, credential JSON out.",
            discussion: """
                Reads the PublicKeyCredentialCreationOptionsJSON your server produced, checks the origin against the \
                RP ID with the Public Suffix List (and related origins), lets you choose this computer, a phone or a \
                security key, and prints the RegistrationResponseJSON that PublicKeyCredential.toJSON() gives, for \
                your server to verify unchanged. Errors are the DOMException a browser raises, one line each, with \
                its own exit status (Docs/Client.md).
                """)

        @OptionGroup var options: WebAuthnClientOptions

        func run() async throws {
            let options = options
            let holder = StoreHolder()
            try await options.run {
                var request = try PublicKeyCredentialCreationOptions(json: try options.readOptions())
                if !options.hint.isEmpty { request.hints = options.hint }
                try await options.appAssociation.check(
                    rpID: request.relyingParty.id, origin: options.origin, store: options.store)
                let engine = try options.makeEngine(ceremony: .create, holder: holder)
                let credential = try await engine.create(request, origin: options.origin)
                options.printCredential(
                    json: credential.json(.compact), pretty: credential.json(.pretty),
                    summary: [
                        "created a passkey (\(credential.authenticatorAttachment.rawValue), transports "
                            + "\(credential.transports.map(\.rawValue).joined(separator: ","))): "
                            + credential.id.base64URLEncodedString
                    ])
            }
        }
    }

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "navigator.credentials.get(): relying party options JSON in, assertion JSON out.",
            discussion: """
                Reads the PublicKeyCredentialRequestOptionsJSON your server produced and signs in the way a browser \
                does: this computer's passkeys first (listed without the passphrase), a phone by QR code, a \
                security key when asked for. --mediation conditional lists this computer's passkeys as autofill \
                does and shows a QR code only when you pick the phone; immediate, and \
                --prefer-immediately-available, fail at once with NotAllowedError when no passkey here matches. \
                Prints the AuthenticationResponseJSON for your server to verify unchanged (Docs/Client.md).
                """)

        @OptionGroup var options: WebAuthnClientOptions

        @Option(help: "How the request is mediated (default: optional, or what the options' wrapper says).")
        var mediation: CredentialMediation?

        @Flag(help: "Fail at once, showing nothing, unless a passkey on this computer matches.")
        var preferImmediatelyAvailable = false

        @Option(
            help: ArgumentHelp(
                "A user name typed into the sign-in form: a conditional request becomes a modal one for that user's "
                    + "passkeys.", valueName: "name"))
        var username: String?

        @Flag(
            help: """
                Also offer the passwords saved for the RP ID (`passkey password add`) in the same chooser; choosing \
                one prints {"type":"password","id":USER,"password":PASSWORD} instead of an assertion.
                """)
        var password = false

        func run() async throws {
            let options = options
            let holder = StoreHolder()
            let mediation = mediation
            let parameters = (preferImmediatelyAvailable, username)
            let offerPasswords = password
            try await options.run {
                let request = try PublicKeyCredentialRequestOptions(json: try options.readOptions())
                try await options.appAssociation.check(
                    rpID: request.relyingPartyID, origin: options.origin, store: options.store)
                let engine = try options.makeEngine(ceremony: .get, holder: holder)
                let chosen =
                    mediation ?? request.wrapperMediation.flatMap(CredentialMediation.init(rawValue:)) ?? .optional
                let getParameters = GetParameters(
                    mediation: chosen, preferImmediatelyAvailableCredentials: parameters.0,
                    hints: options.hint.isEmpty ? nil : options.hint, userName: parameters.1)
                let credential: AuthenticationCredential
                if offerPasswords {
                    let storeURL = options.store.url
                    let result = try await engine.get(
                        request, origin: options.origin, parameters: getParameters,
                        passwords: { relyingPartyID in
                            LocalPasswords.listing(storeURL: storeURL, relyingPartyID: relyingPartyID)
                        })
                    switch result {
                    case .publicKey(let assertion): credential = assertion
                    case .password(let login):
                        try await LocalPasswords.print(login, store: options.store, json: options.json)
                        return
                    }
                } else {
                    credential = try await engine.get(request, origin: options.origin, parameters: getParameters)
                }
                options.printCredential(
                    json: credential.json(.compact), pretty: credential.json(.pretty),
                    summary: [
                        "signed in (\(credential.authenticatorAttachment.rawValue)) with "
                            + credential.id.base64URLEncodedString
                    ])
            }
        }
    }
}

/// `--link` and `--linked NAME`: remembering a phone after a QR session, and reaching it later without one.
struct ClientLinkOptions: ParsableArguments {
    @Flag(
        help: """
            Offer the phone to remember this computer (QR code key 4): the link it sends is kept in links.json \
            beside the store, and `--linked NAME` reaches it later without a QR code.
            """)
    var link = false

    @Option(
        help: ArgumentHelp(
            "Reach the linked phone with this name through its relay instead of showing a QR code "
                + "(`passkey client links` lists them).", valueName: "name"))
    var linked: String?

    @Option(help: ArgumentHelp("The links file (default: links.json beside the store).", valueName: "file"))
    var links: String?

    func validate() throws {
        if link && linked != nil {
            throw ValidationError("--link (a QR session) and --linked (no QR code) exclude each other.")
        }
    }

    func book(store: StoreOptions) -> LinkedPhoneBook {
        LinkedPhoneBook(url: links.map { URL(fileURLWithPath: $0) } ?? ClientLinking.bookURL(store: store))
    }

    func book(besides stateURL: URL) -> LinkedPhoneBook {
        LinkedPhoneBook(url: links.map { URL(fileURLWithPath: $0) } ?? PasskeyFiles(store: stateURL).computerLinks)
    }
}
