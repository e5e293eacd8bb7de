import Basics
import ArgumentParser
import CTAP2
import Foundation
import Hybrid
import PasskeyProvider
import PasskeyStoreIO
import HybridDriver
import Proximity
import HybridIO
import ProximityIO
import QRImageIO
import TerminalIO

extension Passkey {
    struct Scan: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Be the phone: answer a computer's hybrid QR code with the passkeys in the store.",
            discussion: """
                Reads the FIDO:/ URL from the argument, from --image (a PNG or PGM photo or screenshot of the \
                QR code), or from standard input. Connects to the relay, advertises over Bluetooth so the \
                computer knows this authenticator is near, answers the handshake, and serves one request \
                (unless --keep-open), asking before it creates a passkey or signs in.
                """
        )

        @Argument(help: "The FIDO:/… URL the QR code holds (default: read from --image or standard input).")
        var url: String?
        @Option(
            help: ArgumentHelp("Read the QR code from this PNG or PGM image.", valueName: "file"),
            completion: .file(extensions: ["png", "pgm"]))
        var image: String?
        @OptionGroup var hybrid: HybridOptions
        @OptionGroup var store: StoreOptions
        @OptionGroup var approval: ApprovalOptions
        @Flag(help: "Serve every request until the computer closes the tunnel, not only the first.")
        var keepOpen = false
        @Option(
            help: ArgumentHelp(
                "Tunnel server domain ID to advertise (0 Google, 1 Apple, 256+ hashed).", valueName: "id"))
        var domain: UInt16 = 0
        @Flag(
            help: """
                Remember the computer: when its QR code says it can store linking information, send it, so that it \
                can reach this phone later without a QR code through --relay while `passkey listen` runs.
                """)
        var link = false
        @Option(help: ArgumentHelp("The name the computer shows for this phone (with --link).", valueName: "name"))
        var name: String?
        /// `--json`: once the computer has closed the tunnel, `{"answered": N, "linkId": HEX}` (`PhoneLines.scanJSON`).
        @OptionGroup var format: JSONOption

        func validate() throws {
            if url != nil && image != nil { throw ValidationError("Give the FIDO:/ URL or --image, not both.") }
            if link && hybrid.tunnelServer == nil {
                throw ValidationError(
                    "--link needs --relay: a self-hosted passkey-relay wakes this phone (the public tunnel servers wake "
                        + "phones through their vendors' push services).")
            }
            if name != nil && !link { throw ValidationError("--name goes with --link.") }
            guard TunnelDomain.isValid(domain) else {
                throw ValidationError("--domain: \(TunnelDomainError.unassigned(domain))")
            }
        }

        @OptionGroup var verbosity: OutputOptions

        func run() async throws {
            let payload = try readQRCode()
            let interface = TerminalInterface()
            interface.report(.phone(.qrCodeRead(createsPasskey: payload.requestType?.effective == .makeCredential)))
            let tls = try hybrid.tlsConfiguration()
            let advertiser = try await Radio.advertiser(for: hybrid.mode)
            let options = PhoneService.ScanOptions(
                tunnelServer: hybrid.tunnelServer, domain: try TunnelDomain(id: domain), keepOpen: keepOpen,
                linkName: link ? (name ?? PhoneLinks.defaultName()) : nil)
            do {
                try await self.store.access(interface).withServingStore(create: true) { store in
                    let consent = DeclineRecorder(
                        approval.consent(interface: interface, store: store, openingVerifies: true))
                    let service = PhoneService(
                        store: store, interface: interface, consent: consent, advertiser: advertiser,
                        radio: hybrid.mode, environment: .system(tls: tls), timeouts: hybrid.timeouts)
                    let outcome = try await service.answer(payload, options: options)
                    await advertiser.close()
                    if consent.declined { throw Declined(message: "the request was declined at the prompt") }
                    if format.json { printJSON(JSONOutput.text(PhoneLines.scanJSON(outcome))) }
                }
            } catch {
                await advertiser.close()
                throw error
            }
        }

        /// The payload from the argument, the image or standard input, checked before anything is opened.
        func readQRCode() throws -> QRCodePayload {
            let text = try Self.qrCodeText(url: url, image: image, prefix: QRCodePayload.prefix)
            do throws(QRCodeError) {
                return try QRCodePayload(url: text)
            } catch .missingPrefix {
                throw CommandFailure("\(QRCodeError.missingPrefix)")
            } catch {
                throw CommandFailure("not a hybrid QR code: \(error)")
            }
        }

        /// A QR code's text, trimmed: `url` when given, else the one code in `image` that starts with `prefix`
        /// (in any case), else a line of standard input (with a prompt on a terminal). A picture without such a
        /// code gets `wrongKind(image)` when that names what it holds instead.
        static func qrCodeText(
            url: String?, image: String?, prefix: String,
            wrongKind: (String, [String]) -> CommandFailure? = { _, _ in nil }
        ) throws -> String {
            var text: String
            if let url {
                text = url
            } else if let image {
                let codes = try QRImageReader.decode(contentsOf: image)
                let found = codes.filter { $0.uppercased().hasPrefix(prefix) }
                guard found.count == 1 else {
                    if found.isEmpty, let failure = wrongKind(image, codes) { throw failure }
                    throw CommandFailure(
                        found.isEmpty
                            ? "\(image) holds no \(prefix) QR code"
                            : "\(image) holds \(found.count) \(prefix) QR codes; crop it to one")
                }
                text = found[0]
            } else {
                if isatty(STDIN_FILENO) == 1 { Terminal.shared.write("Paste the \(prefix) URL and press Enter: ") }
                guard let line = readLine(strippingNewline: true) else {
                    throw CommandFailure("no \(prefix) URL given (argument, --image or standard input)")
                }
                text = line
            }
            return text.trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }
}
