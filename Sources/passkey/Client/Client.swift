import ArgumentParser
import Basics
import CTAP2
import TerminalIO
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
import PasskeyFilesIO
import PasskeyProvider
import PasskeySettings

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
            subcommands: [
                Create.self, Get.self, Signal.self, Register.self, SignIn.self, Capabilities.self, Links.self,
            ]
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
            valueName: "file"), completion: .file(extensions: ["json"]))
    var rpState: String?
    @Option(
        help: ArgumentHelp("Also write the QR code to this PNG file.", valueName: "file"),
        completion: .file(extensions: ["png"])) var qrPNG: String?
    /// `--json`: the outcome as one JSON object on standard output (progress goes to standard error).
    @OptionGroup var format: JSONOption
    var json: Bool { format.json }
    @OptionGroup var hybrid: HybridOptions
    @OptionGroup var linking: ClientLinkOptions
    @OptionGroup var store: StoreOptions

    var stateURL: URL {
        if let rpState { return URL(fileURLWithPath: rpState) }
        return PasskeyFiles(store: URL(fileURLWithPath: checkedSettings().store.value)).relyingPartyState
    }

    func validate() throws {
        do {
            _ = try OriginCheck.validate(relyingPartyID: rp, origin: origin ?? "https://\(rp)")
        } catch {
            throw ValidationError("\(error)")
        }
    }

    /// The relying party these conveniences play, over the state file.
    var localRelyingParty: LocalRelyingParty {
        LocalRelyingParty(
            relyingPartyID: rp, origin: origin, state: .file(stateURL), interface: TerminalInterface(),
            random: { AuthenticatorEnvironment.systemRandomBytes($0) })
    }

    /// The engine with a phone as its only authenticator: the QR code, the advert, the relay, then one request.
    /// The links are sealed in the passkey store (`--store`), unlocked first when `--link` or `--phone` asks.
    func phoneEngine() async throws -> ClientEngine {
        let service = BrowserService(
            links: linking.computerLinks(store: UnlockedStore(access: store.access())),
            factory: hybrid.browserFactory(json: json, qrPNG: qrPNG))
        return ClientEngine(
            environment: ClientEnvironment(
                authenticators: try await service.authenticators(
                    for: BrowserAuthenticators(thisComputer: false, phone: linking.phone)),
                userInterface: TerminalClientInterface(
                    unattended: false, pin: SecurityKeyPIN.source(environment: ProcessInfo.processInfo.environment)),
                relyingPartyIDChecker: try SuffixListRelyingPartyIDChecker.fromSystemList(relatedOrigins: nil)))
    }

    /// Runs a ceremony; a `ClientError` is one line and its exit status.
    func run<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as ClientError {
            Terminal.shared.write(ClientLines.failure(error, nobodyAnswered: TerminalClientInterface.nobodyAnswered))
            throw ExitCode(error.exitStatus)
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
