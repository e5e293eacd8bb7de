import Basics
import ArgumentParser
import CrossDevice
import Foundation
import Hybrid
import HybridLink
import HybridTransport
import PasskeyStore
import Proximity
import QRImage
import RelyingParty
import RelyingPartyServer
import WebAuthn

extension Passkey {
    struct Client: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Be the computer: register or sign in with a phone (or `passkey scan`) over hybrid.",
            discussion: """
                Shows a QR code, waits for the authenticator's Bluetooth advert, connects through the relay it \
                names, and sends one request with a clientDataJSON built as a browser builds it. The answer is \
                verified by this package's relying-party verifier; registrations are kept in the relying party \
                state file (public keys only).
                """,
            subcommands: [Create.self, Get.self, Register.self, SignIn.self]
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

    /// Runs `ceremony` with a client set up from the options, printing the QR code and progress.
    func run<T: Sendable>(
        _ ceremony: @Sendable (CrossDeviceClient, inout RelyingPartyState) async throws(CrossDeviceError) -> T
    ) async throws -> T {
        var state = try RelyingPartyState.load(from: stateURL)
        let tls = try hybrid.tlsConfiguration()
        let mode = hybrid.mode
        let scanner = try await Radio.scanner(for: mode)
        let status = StatusLine(enabled: true)
        let json = json
        let qrPNG = qrPNG
        let client = try CrossDeviceClient(
            relyingParty: RelyingPartyEntity(id: rp), origin: origin, scanner: scanner,
            tunnelServer: hybrid.tunnelServer, environment: .system(tls: tls), timeouts: hybrid.timeouts,
            progress: { event in
                switch event {
                case .hybrid(.showQRCode(let url)):
                    Self.show(url: url, toStandardError: json, png: qrPNG)
                    status.say("waiting for a phone to scan the QR code and come near (Bluetooth: \(mode))")
                case .hybrid(.advertSeen(let routingID, let domain)):
                    status.say("advert seen: the authenticator is near; relay \(domain.host), routing ID \(routingID)")
                case .hybrid(.tunnelConnected(let url)):
                    status.say("tunnel connected: \(Passkey.Scan.host(of: url))")
                case .hybrid(.handshakeDone):
                    status.say("handshake done: end-to-end encrypted")
                case .hybrid(.requestSent(let command)):
                    status.say("request sent: \(CTAPCommandName.name(command))")
                case .hybrid(.responseReceived(let code)):
                    status.say("answer received\(code == 0 ? "" : " (CTAP status 0x\(String(code, radix: 16)))")")
                case .verified:
                    status.say("verified by the relying party")
                }
            })
        do {
            let outcome = try await ceremony(client, &state)
            await scanner.close()
            try state.save(to: stateURL)
            return outcome
        } catch {
            await scanner.close()
            Terminal.shared.write("passkey: \(error)\n")
            throw ExitCode.failure
        }
    }

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
            abstract: "Register a discoverable passkey for an account through a phone.")

        @OptionGroup var options: ClientOptions
        @Option(help: "Account name to register.") var user: String
        @Option(help: "Display name (default: the account name).") var displayName: String?

        func run() async throws {
            let user = user
            let displayName = displayName
            let registration = try await options.run { client, state throws(CrossDeviceError) in
                try await client.register(userName: user, displayName: displayName, state: &state)
            }
            let credentialID = registration.credential.id.base64URLEncodedString
            if options.json {
                try ClientOptions.printJSON([
                    "outcome": "registered", "rpID": registration.rpID, "user": registration.userName,
                    "credentialID": credentialID, "attestationFormat": registration.attestationFormat,
                    "userVerified": registration.userVerified, "aaguid": registration.credential.aaguid.description,
                    "rpState": options.stateURL.path,
                ])
            } else {
                print("registered \(registration.userName) at \(registration.rpID)")
                print("  credential ID  \(credentialID)")
                print("  attestation    \(registration.attestationFormat), user verified \(registration.userVerified)")
                print("  saved to       \(options.stateURL.path)")
            }
        }
    }

    struct SignIn: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "sign-in",
            abstract: "Sign in with a passkey registered earlier, through a phone.",
            discussion: "Without --user the request has no allowList and the phone picks the account.")

        @OptionGroup var options: ClientOptions
        @Option(help: "Sign in as this registered account (its credential goes in the allowList).") var user: String?

        func run() async throws {
            let user = user
            let signIn = try await options.run { client, state throws(CrossDeviceError) in
                try await client.signIn(userName: user, state: &state)
            }
            let credentialID = signIn.credentialID.base64URLEncodedString
            if options.json {
                var object: [String: Any] = [
                    "outcome": "signedIn", "rpID": signIn.rpID, "credentialID": credentialID,
                    "userVerified": signIn.userVerified,
                ]
                object["user"] = signIn.userName
                try ClientOptions.printJSON(object)
            } else {
                print("signed in to \(signIn.rpID) as \(signIn.userName ?? "an unnamed account")")
                print("  credential ID  \(credentialID)")
                print("  user verified  \(signIn.userVerified)")
            }
        }
    }
}
