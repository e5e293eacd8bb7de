import ArgumentParser
import Basics
import CTAP2
import TerminalIO
import WebAuthnClientDriver
import Foundation
import Hybrid
import HybridDriver
import PasskeyStoreIO
import Proximity
import PublicSuffix
import SecurityKeyDriver
import Synchronization
import WebAuthnClient
import WebAuthnClientIO
import PasskeyFilesIO
import PasskeyProvider

extension CredentialMediation: ExpressibleByArgument {}
extension PublicKeyCredentialHint: ExpressibleByArgument {}

/// What `client create` and `client get` share: where the options come from, the origin, the authenticators, and how
/// the result is printed.
struct WebAuthnClientOptions: ParsableArguments {
    @Option(
        name: .customLong("options"),
        help: ArgumentHelp(
            "The relying party's options JSON (PublicKeyCredentialCreationOptionsJSON or …RequestOptionsJSON, bare "
                + "or inside {\"publicKey\": …}); - reads standard input.", valueName: "file|-"),
        completion: .file(extensions: ["json"]))
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

    /// `--json`: exactly the credential's toJSON() on one line, and nothing else on standard output.
    @OptionGroup var format: JSONOption
    var json: Bool { format.json }

    @Option(
        help: ArgumentHelp("Also write the phone's QR code to this PNG file.", valueName: "file"),
        completion: .file(extensions: ["png"])) var qrPNG: String?

    @OptionGroup var store: StoreOptions
    @OptionGroup var approval: ApprovalOptions
    @OptionGroup var hybrid: HybridOptions
    @OptionGroup var appAssociation: AppAssociationOptions

    /// The largest options file read: well above what any relying party sends, and what the engine refuses beyond.
    static let maximumOptionsBytes = 1 << 20

    func validate() throws {
        if noPhone && (linking.link || linking.linked != nil) {
            throw ValidationError("--link and --phone need a phone: drop --no-phone.")
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
        do {
            return try CommandInput.read(optionsPath, limit: Self.maximumOptionsBytes, what: "options file")
        } catch {
            throw CommandFailure(error.description)
        }
    }

    /// The engine over what the flags ask for; which authenticators that is, and how links are kept, is the
    /// browser service's. This computer and the linked phones share one unlocked store: `--link` and `--phone`
    /// unlock it first (the links are sealed in it), and the chooser then lists this computer's passkeys from its
    /// sealed rows.
    func makeEngine(ceremony: ClientCeremony, thisComputer: ThisComputer) async throws -> ClientEngine {
        let interface = TerminalClientInterface(
            unattended: approval.unattended,
            pin: SecurityKeyPIN.source(environment: ProcessInfo.processInfo.environment))
        let store = store
        let service = BrowserService(
            links: linking.computerLinks(store: thisComputer.store),
            factory: hybrid.browserFactory(
                json: json, qrPNG: qrPNG,
                thisComputer: {
                    thisComputer.authenticator(reportError: { error in
                        Terminal.shared.write("passkey: store error: \(error)\n")
                    })
                }))
        let authenticators = try await service.authenticators(
            for: BrowserAuthenticators(
                thisComputer: FileManager.default.fileExists(atPath: store.url.path),
                phone: noPhone ? .notOffered : linking.phone,
                securityKey: securityKey.flatMap { try? SecurityKeySpec(parsing: $0) }))
        return ClientEngine(
            environment: ClientEnvironment(
                authenticators: authenticators, userInterface: interface,
                relyingPartyIDChecker: try SuffixListRelyingPartyIDChecker.fromSystemList(
                    relatedOrigins: HTTPSRelatedOriginsSource()),
                conditionalCreation: { relyingPartyID, userName in
                    await thisComputer.allowsConditionalCreation(relyingPartyID: relyingPartyID, userName: userName)
                }))
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
    /// Ctrl-C ends it as it ends every command (`Interruption`: `passkey: interrupted`, status 130).
    func run<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as ClientError {
            Terminal.shared.write(ClientLines.failure(error, nobodyAnswered: TerminalClientInterface.nobodyAnswered))
            throw ExitCode(error.exitStatus)
        }
    }
}

/// `--link` and `--phone NAME`: remembering a phone after a QR session (the act of linking, `--link` as on
/// `passkey scan`), and reaching a linked phone later without one, chosen by name as `--security-key` chooses a key
/// (Docs/CommandLine.md, "Links").
struct ClientLinkOptions: ParsableArguments {
    @Flag(
        help: """
            Offer the phone to remember this computer (QR code key 4): the link it sends is sealed in the passkey \
            store (which this unlocks), and `--phone NAME` reaches it later without a QR code.
            """)
    var link = false

    @Option(
        name: .customLong("phone"),
        help: ArgumentHelp(
            "Reach the linked phone with this name through its relay instead of showing a QR code "
                + "(`passkey client links` lists them); unlocks the passkey store, where links are sealed.",
            valueName: "name"))
    var linked: String?

    func validate() throws {
        if link && linked != nil {
            throw ValidationError("--link (a QR session) and --phone (a linked phone, no QR code) exclude each other.")
        }
    }

    /// The phone these flags ask for, when a phone is offered at all.
    var phone: BrowserAuthenticators.Phone { linked.map { .linked(name: $0) } ?? .qrCode(link: link) }

    /// The links sealed in `store`.
    func computerLinks(store: UnlockedStore) -> ComputerLinks {
        ComputerLinks(store: store, interface: TerminalInterface())
    }
}
