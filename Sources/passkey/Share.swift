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
        @Option(help: ArgumentHelp("Also write the QR code to this PNG file.", valueName: "file")) var qrPNG: String?
        @OptionGroup var approval: ApprovalOptions

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
            let outcome: ShareOutcome
            do {
                outcome = try await link.receive(
                    progress: { event in Self.report(event, status: status, mode: mode, png: qrPNG) },
                    decide: { passkey in
                        let outcome = try await service.receive(passkey)
                        Self.render(outcome, passkey.credential, store: store)
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
            switch outcome {
            case .declined: throw CommandFailure("nothing was added: you declined the passkey")
            default: break
            }
        }

        /// What was done with the passkey, on standard output.
        static func render(_ outcome: ShareOutcome, _ credential: StoredCredential, store: SQLiteCredentialStore) {
            let site = credential.relyingPartyID.terminalSafe
            let name = (credential.userName ?? "no name").siteChosen
            switch outcome {
            case .added:
                print("Added the passkey for \(name) at \(site).")
                print("  credential ID  \(credential.id.base64URLEncodedString)")
            case .alreadyPresent:
                print("This store already has that passkey (\(site), \(name)); nothing was added.")
            default:
                break
            }
        }

        static func report(_ event: ShareReceiverProgress, status: StatusLine, mode: ProximityMode, png: String?) {
            switch event {
            case .showQRCode(let url):
                ClientOptions.show(url: url, toStandardError: false, png: png)
                status.say("waiting for the sender to scan the QR code and come near (Bluetooth: \(mode))")
            case .hybrid(.advertSeen(let routingID, let domain)):
                status.say("advert seen: the sender is near; relay \(domain.host), routing ID \(routingID)")
            case .hybrid(.tunnelConnected(let url)):
                status.say("tunnel connected: \(PhoneLines.host(of: url))")
            case .hybrid(.handshakeDone):
                status.say("handshake done: end-to-end encrypted")
            case .hybrid(.requestSent), .hybrid(.responseReceived), .hybrid(.showQRCode), .hybrid(.contacting),
                .hybrid(.linkedPhoneNear):
                break  // a share has its own QR code and no linked phone
            case .passkeyReceived:
                status.say("passkey received: sealed to this QR code and this session, and checked")
            case .acknowledged(let outcome):
                status.say("the sender was told: \(outcome)")
            case .acknowledgementFailed(let reason):
                status.say("the sender could not be told what was done here: \(reason)")
            }
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

        @Argument(
            help: """
                The passkey's credential ID, in base64url (as `passkey list` shows it) or hex; prefix it with b64: \
                or hex: to say which.
                """)
        var credentialID: String
        @Argument(help: "The PASSKEY-SHARE:/… URL the receiver shows (default: read from --image or standard input).")
        var url: String?
        @Option(help: ArgumentHelp("Read the QR code from this PNG or PGM image.", valueName: "file"))
        var image: String?
        @OptionGroup var hybrid: HybridOptions
        @OptionGroup var store: StoreOptions
        @OptionGroup var approval: ApprovalOptions
        @Option(
            help: ArgumentHelp(
                "Tunnel server domain ID to advertise (0 Google, 1 Apple, 256+ hashed).", valueName: "id"))
        var domain: UInt16 = 0

        func validate() throws {
            guard CredentialIDText(credentialID) != nil else {
                throw ValidationError("'\(credentialID)' is not a base64url or hex credential ID.")
            }
            if url != nil && image != nil {
                throw ValidationError("Give the PASSKEY-SHARE:/ URL or --image, not both.")
            }
            guard TunnelDomain.isValid(domain) else {
                throw ValidationError("--domain: \(TunnelDomainError.unassigned(domain))")
            }
        }

        func run() async throws {
            let qrCode = try readQRCode()
            let store = try await store.open(create: false)
            defer { store.close() }
            let interface = TerminalInterface()
            let service = ShareService(
                store: store, interface: interface, mode: approval.mode, canAsk: interface.canAsk)
            let credential = try service.passkey(
                candidates: CredentialIDText(credentialID)?.candidates ?? [], text: credentialID)
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
                    status.say(Self.describe(event, mode: mode))
                }
            } catch {
                await advertiser.close()
                throw CommandFailure("\(error)", hint: "The passkey was not shared.")
            }
            await advertiser.close()
            let account =
                "\((credential.userName ?? "no name").siteChosen) at \(credential.relyingPartyID.terminalSafe)"
            switch outcome {
            case .added: print("Shared the passkey for \(account): the receiver added it.")
            case .alreadyPresent: print("The receiver already had the passkey for \(account); nothing changed.")
            case .declined: throw CommandFailure("the receiver declined the passkey for \(account)")
            default: throw CommandFailure("the receiver refused the passkey for \(account) (\(outcome))")
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

        static func describe(_ event: HybridAuthenticatorProgress, mode: ProximityMode) -> String {
            switch event {
            case .connecting(let url): "connecting to the relay \(PhoneLines.host(of: url))"
            case .advertising(let routingID): "tunnel registered (routing ID \(routingID)); advertising over \(mode)"
            case .handshakeDone: "receiver connected: handshake done"
            case .requestReceived(let command):
                command == ShareCommand.request.rawValue
                    ? "the receiver asks for the passkey" : "the receiver acknowledges"
            case .responseSent(let status):
                status == 0 ? "answer sent" : "refused (status 0x\([status].upperHexString))"
            }
        }
    }
}
