import ArgumentParser
import Basics
import CTAP2
import WebAuthnClientDriver
import Foundation
import Hybrid
import HybridDriver
import HybridIO
import PasskeyStoreIO
import Proximity
import PublicSuffix
import QRImageIO
import RelyingParty
import WebRelyingPartyIO
import WebAuthn
import WebAuthnClient
import WebAuthnClientIO
import WebRelyingParty

extension Passkey {
    struct Client: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Be the browser: a WebAuthn client for your relying party's options, or a quick phone sign-in.",
            discussion: """
                `create` and `get` take the options JSON your server produced and print the credential JSON it \
                verifies, choosing this computer's passkeys, a phone (QR code, Bluetooth advert, relay) or a \
                security key as a browser does (Docs/Client.md). `register` and `sign-in` are conveniences over the \
                same client with this package's own relying party and a phone, which keep the public keys in a \
                relying party state file.
                """,
            subcommands: [Create.self, Get.self, Register.self, SignIn.self, Links.self]
        )
    }
}

/// Options both client commands share.
struct ClientOptions: ParsableArguments {
    @Option(help: "Relying party ID, for example example.com.") var rp: String
    @Option(help: ArgumentHelp("Origin of the page asking (default: https://RP).", valueName: "url"))
    var origin: String?
    @Option(
        help: ArgumentHelp(
            "The relying party's records of registered passkeys (default: rp-state.json beside the store).",
            valueName: "file"))
    var rpState: String?
    @Option(help: ArgumentHelp("Also write the QR code to this PNG file.", valueName: "file")) var qrPNG: String?
    @Flag(help: "Print the outcome as one JSON object on standard output (progress goes to standard error).")
    var json = false
    @OptionGroup var hybrid: HybridOptions
    @OptionGroup var linking: ClientLinkOptions

    var stateURL: URL {
        if let rpState { return URL(fileURLWithPath: rpState) }
        return RelyingPartyState.defaultURL(
            storeURL: SQLiteCredentialStore.defaultURL(environment: ProcessInfo.processInfo.environment))
    }

    func validate() throws {
        do {
            _ = try OriginCheck.validate(relyingPartyID: rp, origin: origin ?? "https://\(rp)")
        } catch {
            throw ValidationError("\(error)")
        }
    }

    /// The relying party these conveniences play: this package's web relying party for `--rp`, the one behind
    /// `passkey rp serve`, whose options go to the WebAuthn engine as a server's would.
    var relyingParty: WebRelyingParty {
        WebRelyingParty(
            configuration: .init(
                relyingParty: RelyingPartyEntity(id: rp, name: rp), origins: [origin ?? "https://\(rp)"]))
    }

    /// The engine with a phone as its only authenticator: the QR code, the advert, the relay, then one request.
    func phoneEngine() throws -> ClientEngine {
        let book = linking.book(besides: stateURL)
        let phone: any ClientAuthenticator =
            if let name = linking.linked {
                try hybrid.linkedPhone(named: name, book: book)
            } else {
                try hybrid.phone(json: json, qrPNG: qrPNG, rememberIn: linking.link ? book : nil)
            }
        return ClientEngine(
            environment: ClientEnvironment(
                authenticators: [phone],
                userInterface: TerminalClientInterface(
                    unattended: false, pin: ClientPINSource.provider(environment: ProcessInfo.processInfo.environment)),
                relyingPartyIDChecker: try SuffixListRelyingPartyIDChecker.fromSystemList(relatedOrigins: nil)))
    }

    /// Sends the relying party's answer to `verify` and saves the state it returns; a refusal is a failure.
    func conclude(_ outcome: VerificationOutcome) throws -> AcceptedResponse {
        switch outcome.verdict {
        case .registered(let accepted), .authenticated(let accepted):
            if let newState = outcome.newState { try newState.save(to: stateURL) }
            Terminal.shared.write("passkey: verified by the relying party\n")
            return accepted
        case .refused(_, let error, _):
            throw CommandFailure("the relying party refused the answer: \(error)")
        case .clientError(let result):
            throw CommandFailure("the relying party refused the answer: \(result.message)")
        }
    }

    /// Runs a ceremony; a `ClientError` is one line and its exit status.
    func run<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as ClientError {
            Terminal.shared.write("passkey: \(error.description.terminalSafe)\n")
            throw ExitCode(error.exitStatus)
        }
    }

    static func random(_ count: Int) -> [UInt8] { AuthenticatorEnvironment.systemRandomBytes(count) }

    /// Prints the QR code and its URL: on standard output, or standard error when the output is JSON.
    static func show(url: String, toStandardError: Bool, png: String?) {
        var text = ""
        do {
            let matrix = try QRMatrix(encoding: url)
            let style = QRMatrix.TerminalStyle.preferred(
                environment: ProcessInfo.processInfo.environment,
                isTerminal: isatty(toStandardError ? STDERR_FILENO : STDOUT_FILENO) == 1)
            text = try matrix.terminalText(style: style)
            if let png { try matrix.writePNG(to: png) }
        } catch {
            text = "(the QR code could not be drawn: \(error))\n"
        }
        if !text.hasSuffix("\n") { text += "\n" }
        text += url + "\n"
        if toStandardError {
            Terminal.shared.write(text)
        } else {
            FileHandle.standardOutput.write(Data(text.utf8))
        }
    }

    /// Writes a JSON object on standard output.
    static func printJSON(_ object: [String: Any]) throws {
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }
}

extension Passkey.Client {
    struct Register: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register a discoverable passkey for an account through a phone.",
            discussion: """
                A convenience over `client create`: this package's relying party for --rp writes the options \
                (resident key and user verification required, the account's passkeys excluded), the WebAuthn \
                client reaches a phone by QR code, and the relying party verifies the answer and keeps the public \
                key in its state file.
                """)

        @OptionGroup var options: ClientOptions
        @Option(help: "Account name to register.") var user: String
        @Option(help: "Display name (default: the account name).") var displayName: String?

        func run() async throws {
            let options = options
            let accepted = try await options.run {
                let state = try RelyingPartyState.load(from: options.stateURL)
                var relyingParty = options.relyingParty
                let request = relyingParty.registrationOptions(
                    for: RegistrationOptionsRequest(
                        userName: user, displayName: displayName, residentKey: .required, userVerification: .required),
                    state: state, challenge: ClientOptions.random(32), newUserHandle: ClientOptions.random(16),
                    now: .now)
                let credential = try await options.phoneEngine().create(
                    PublicKeyCredentialCreationOptions(json: request), origin: options.origin ?? "https://\(options.rp)"
                )
                return try options.conclude(
                    relyingParty.verifyRegistration(credential.json(), state: state, now: .now, date: Date()))
            }
            let credentialID = accepted.credential.id.base64URLEncodedString
            if options.json {
                try ClientOptions.printJSON([
                    "outcome": "registered", "rpID": options.rp, "user": accepted.userName,
                    "credentialID": credentialID, "attestationFormat": accepted.credential.attestationFormat,
                    "userVerified": accepted.userVerified, "aaguid": accepted.credential.aaguid.description,
                    "rpState": options.stateURL.path,
                ])
            } else {
                print("registered \(accepted.userName) at \(options.rp)")
                print("  credential ID  \(credentialID)")
                print(
                    "  attestation    \(accepted.credential.attestationFormat), user verified \(accepted.userVerified)")
                print("  saved to       \(options.stateURL.path)")
            }
        }
    }

    struct SignIn: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "sign-in",
            abstract: "Sign in with a passkey registered earlier, through a phone.",
            discussion: """
                A convenience over `client get`, with this package's relying party for --rp. Without --user the \
                request has no allowCredentials and the phone picks the account.
                """)

        @OptionGroup var options: ClientOptions
        @Option(help: "Sign in as this registered account (its credential goes in the allowList).") var user: String?

        func run() async throws {
            let options = options
            let accepted = try await options.run {
                let state = try RelyingPartyState.load(from: options.stateURL)
                guard state.accounts(for: options.rp).contains(where: { user == nil || $0.userName == user }) else {
                    throw CommandFailure(
                        "no passkey for \(options.rp)\(user.map { " and \($0)" } ?? "") in \(options.stateURL.path)",
                        hint: "Register one first with `passkey client register`.")
                }
                var relyingParty = options.relyingParty
                let request: [UInt8]
                do {
                    request = try relyingParty.authenticationOptions(
                        for: AuthenticationOptionsRequest(userName: user, userVerification: .required), state: state,
                        challenge: ClientOptions.random(32), now: .now)
                } catch {
                    throw CommandFailure("\(error)")
                }
                let credential = try await options.phoneEngine().get(
                    PublicKeyCredentialRequestOptions(json: request), origin: options.origin ?? "https://\(options.rp)")
                return try options.conclude(
                    relyingParty.verifyAuthentication(credential.json(), state: state, now: .now))
            }
            let credentialID = accepted.credential.id.base64URLEncodedString
            if options.json {
                try ClientOptions.printJSON([
                    "outcome": "signedIn", "rpID": options.rp, "credentialID": credentialID,
                    "userVerified": accepted.userVerified, "user": accepted.userName,
                ])
            } else {
                print("signed in to \(options.rp) as \(accepted.userName)")
                print("  credential ID  \(credentialID)")
                print("  user verified  \(accepted.userVerified)")
            }
        }
    }
}
