import ArgumentParser
import Basics
import CTAP2
import CredentialExchange
import Foundation
import Hybrid
import HybridDriver
import NearbyShare
import NearbyShareDriver
import PasskeyProvider
import PasskeyStoreIO
import Proximity
import ProximityIO
import QRImageIO
import TerminalIO

extension Passkey {
    struct Receive: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Receive a passkey from a person nearby: show a share QR code for `passkey share`.",
            discussion: """
                Shows a PASSKEY-SHARE:/ QR code (never a FIDO:/ one, so no phone or browser takes it for a \
                sign-in) and waits, as a computer does in a hybrid sign-in, for the sender's Bluetooth advert, then \
                meets the sender at the relay and runs the Noise handshake. The passkey arrives sealed with HPKE to a \
                key of this QR code and bound to this session; its site, account name and creation date are shown \
                (never its key) and it is added to the store only after you say yes. See Docs/Exchange.md.
                """)

        @OptionGroup var hybrid: HybridOptions
        @OptionGroup var store: StoreOptions
        @Option(
            help: ArgumentHelp("Also write the QR code to this PNG file.", valueName: "file"),
            completion: .file(extensions: ["png"])) var qrPNG: String?
        @OptionGroup var approval: ApprovalOptions
        /// `--json`: the passkey received, as `ShareLines.json` (the QR code then goes to standard error).
        @OptionGroup var format: JSONOption

        @OptionGroup var verbosity: OutputOptions

        func run() async throws {
            let store = try await store.open(create: true)
            defer { store.close() }
            let interface = TerminalInterface()
            let service = ShareService(
                store: store, interface: interface, mode: approval.mode, canAsk: interface.canAsk)
            let mode = hybrid.mode
            let scanner = try await Radio.scanner(for: mode)
            let status = StatusLine(enabled: true)
            let link = ShareReceiverLink(
                scanner: scanner, tunnelServer: hybrid.tunnelServer, timeouts: hybrid.timeouts,
                environment: .system(tls: try hybrid.tlsConfiguration()))
            let qrPNG = qrPNG
            let json = format.json
            let outcome: ShareOutcome
            do {
                outcome = try await link.receive(
                    progress: { event in
                        if case .showQRCode(let url) = event {
                            ClientOptions.show(url: url, toStandardError: json, png: qrPNG)
                        }
                        ShareLines.receiver(event, radio: mode).map(status.say)
                    },
                    decide: { passkey in
                        let outcome = try await service.receive(passkey)
                        if json {
                            ShareLines.json(outcome, passkey.credential).map { printJSON(JSONOutput.text($0)) }
                        } else {
                            for line in ShareLines.received(outcome, passkey.credential) { printLine(line) }
                        }
                        return outcome
                    })
            } catch let error as ProviderError {
                await scanner.close()
                throw error
            } catch {
                await scanner.close()
                throw CommandFailure("\(error)", hint: "Nothing was added to the store.")
            }
            await scanner.close()
            if outcome == .declined { throw CommandFailure(ShareLines.declinedHere, exitCode: ExitStatus.declined) }
        }
    }

    struct Share: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Share one passkey with a person nearby who runs `passkey receive`.",
            discussion: """
                Reads the receiver's PASSKEY-SHARE:/ QR code (the argument, --image, or standard input), asks you \
                to confirm with the store passphrase, then does what a phone does in a hybrid sign-in: registers a \
                tunnel at the relay, advertises over Bluetooth so the receiver knows you are near, and answers the \
                Noise handshake. The passkey goes as one CXF item sealed with HPKE to the receiver's QR key and \
                bound to the session. Single-device passkeys (not backup eligible) are never shared. See \
                Docs/Exchange.md.
                """)

        @OptionGroup var passkey: CredentialIDArgument
        @Argument(help: "The PASSKEY-SHARE:/… URL the receiver shows (default: read from --image or standard input).")
        var url: String?
        @Option(
            help: ArgumentHelp("Read the QR code from this PNG or PGM image.", valueName: "file"),
            completion: .file(extensions: ["png", "pgm"]))
        var image: String?
        @OptionGroup var hybrid: HybridOptions
        @OptionGroup var store: StoreOptions
        @OptionGroup var approval: ApprovalOptions
        @Option(
            help: ArgumentHelp(
                "Tunnel server domain ID to advertise (0 Google, 1 Apple, 256+ hashed).", valueName: "id"))
        var domain: UInt16 = 0
        /// `--json`: the passkey shared, as `ShareLines.json`.
        @OptionGroup var format: JSONOption

        func validate() throws {
            if url != nil && image != nil {
                throw ValidationError("Give the PASSKEY-SHARE:/ URL or --image, not both.")
            }
            guard TunnelDomain.isValid(domain) else {
                throw ValidationError("--domain: \(TunnelDomainError.unassigned(domain))")
            }
        }

        @OptionGroup var verbosity: OutputOptions

        func run() async throws {
            let qrCode = try readQRCode()
            let store = try await store.open(create: false)
            defer { store.close() }
            let interface = TerminalInterface()
            let service = ShareService(
                store: store, interface: interface, mode: approval.mode, canAsk: interface.canAsk)
            let credential = try service.passkey(
                candidates: passkey.candidates, text: passkey.credentialID)
            let sender: ShareSender
            do throws(ShareError) {
                sender = try ShareSender(credential, to: qrCode, at: Date())
            } catch {
                throw CommandFailure("\(error)")
            }
            try await service.confirmSharing(credential)

            let status = StatusLine(enabled: true)
            let mode = hybrid.mode
            let advertiser = try await Radio.advertiser(for: mode)
            let link = ShareSenderLink(
                advertiser: advertiser, domain: try TunnelDomain(id: domain), tunnelServer: hybrid.tunnelServer,
                timeouts: hybrid.timeouts, environment: .system(tls: try hybrid.tlsConfiguration()))
            let outcome: ShareOutcome
            do throws(ShareLinkError) {
                outcome = try await link.send(sender, to: qrCode) { event in
                    status.say(ShareLines.sender(event, radio: mode))
                }
            } catch {
                await advertiser.close()
                throw CommandFailure("\(error)", hint: "The passkey was not shared.")
            }
            await advertiser.close()
            switch ShareLines.shared(outcome, credential) {
            case .success(let line):
                if format.json, let object = ShareLines.json(outcome, credential) {
                    printJSON(JSONOutput.text(object))
                } else {
                    printLine(line)
                }
            case .failure(let failure): throw CommandFailure(failure.message)
            }
        }

        /// The code from the argument, the image or standard input, checked before the store is opened.
        func readQRCode() throws -> ShareQRCode {
            let text = try Passkey.Scan.qrCodeText(url: url, image: image, prefix: ShareQRCode.prefix) {
                image, codes in
                guard codes.contains(where: { $0.uppercased().hasPrefix(QRCodePayload.prefix) }) else { return nil }
                return CommandFailure(
                    "\(image) holds a sign-in QR code (FIDO:/), not a share code",
                    hint: "Answer sign-in codes with `passkey scan`.")
            }
            do {
                return try ShareQRCode(url: text)
            } catch {
                if (try? QRCodePayload(url: text)) != nil {
                    throw CommandFailure(
                        "that is a sign-in QR code (FIDO:/), not a share code",
                        hint: "Answer sign-in codes with `passkey scan`.")
                }
                throw CommandFailure("not a passkey share QR code: \(error)")
            }
        }
    }
}
