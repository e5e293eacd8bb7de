import ArgumentParser
import Basics
import CTAP2
import CredentialExchange
import Foundation
import Hybrid
import HybridDriver
import NearbyShare
import NearbyShareDriver
import PasskeyStoreIO
import Proximity
import ProximityIO
import QRImageIO

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
        @Flag(name: .long, help: "Add the passkey without asking. For tests and CI only; the output says so.")
        var yes = false

        func run() async throws {
            let unattended = yes || ProcessInfo.processInfo.environment["PASSKEY_ASSUME_YES"] == "1"
            let store = try await store.open(create: true)
            defer { store.close() }
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
                    decide: { passkey in try await Self.decide(passkey, store: store, unattended: unattended) })
            } catch let error as CommandFailure {
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

        /// Shows the passkey (never its key), asks, and adds it in one transaction.
        static func decide(_ passkey: ImportedPasskey, store: SQLiteCredentialStore, unattended: Bool) async throws
            -> ShareOutcome
        {
            let credential = passkey.credential
            let terminal = Terminal.shared
            let site = credential.relyingPartyID.terminalSafe
            let name = (credential.userName ?? "no name").siteChosen
            var line = "A person nearby shares a passkey:\n  \(site)  \(name)"
            if let displayName = credential.userDisplayName, displayName != credential.userName {
                line += " (\(displayName.siteChosen))"
            }
            line += "  created \(ISO8601DateFormatter().string(from: credential.creationDate))\n"
            for note in passkey.notes { line += "      note: \(note.terminalSafe)\n" }
            terminal.write(line)
            if try store.entry(id: credential.id) != nil {
                print("This store already has that passkey (\(site), \(name)); nothing was added.")
                return .alreadyPresent
            }
            let question = "Add it to \(store.url.path)?"
            if unattended {
                Unattended.announce(reason: "--yes or PASSKEY_ASSUME_YES=1")
                terminal.write("passkey: auto-approved: \(question)\n")
            } else {
                guard terminal.isInteractive else {
                    throw CommandFailure("adding a passkey needs your approval", hint: "Run it in a terminal.")
                }
                terminal.write(question + " [y/N] ")
                guard case .line(let answer) = await terminal.readLine(timeout: .seconds(300)),
                    ["y", "yes"].contains(answer.trimmingCharacters(in: .whitespaces).lowercased())
                else { return .declined }
            }
            let outcome = try store.importCredentials([credential])
            guard outcome.added.count == 1 else {
                print("This store already has that passkey (\(site), \(name)); nothing was added.")
                return .alreadyPresent
            }
            print("Added the passkey for \(name) at \(site).")
            print("  credential ID  \(credential.id.base64URLEncodedString)")
            return .added
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
            var found: [StoredCredential] = []
            for id in CredentialIDText(credentialID)?.candidates ?? [] {
                if let credential = try store.credential(id: id) { found.append(credential) }
            }
            guard found.count == 1, let credential = found.first else {
                throw CommandFailure(
                    found.isEmpty
                        ? "no passkey with credential ID \(credentialID)"
                        : "'\(credentialID)' names two passkeys, read as base64url and as hex",
                    hint: found.isEmpty ? "`passkey list` shows the IDs." : "Prefix it with b64: or hex: to say which.")
            }
            let sender: ShareSender
            do throws(ShareError) {
                sender = try ShareSender(credential, to: qrCode, at: Date())
            } catch {
                throw CommandFailure("\(error)")
            }
            try await confirm(credential, store: store)

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

        /// User verification before anything leaves: the question names what goes, then the store passphrase (the
        /// authenticator's UV everywhere in this program), or the announced unattended approval.
        private func confirm(_ credential: StoredCredential, store: SQLiteCredentialStore) async throws {
            let terminal = Terminal.shared
            var question = "\(credential.relyingPartyID.terminalSafe): share the passkey for "
            question += "\((credential.userName ?? "no name").siteChosen) with the person nearby?"
            if approval.unattended {
                Unattended.announce(reason: approval.yes ? "--yes" : "PASSKEY_ASSUME_YES=1")
                terminal.write("passkey: auto-approved: \(question) (user verification auto-approved)\n")
                return
            }
            guard terminal.isInteractive else {
                throw CommandFailure("sharing a passkey needs your approval", hint: "Run it in a terminal.")
            }
            terminal.write(question + " [y/N] ")
            guard case .line(let answer) = await terminal.readLine(timeout: .seconds(120)),
                ["y", "yes"].contains(answer.trimmingCharacters(in: .whitespaces).lowercased())
            else { throw CommandFailure("nothing was shared") }
            for attempt in 1...3 {
                guard
                    case .line(let passphrase) = await terminal.readSecret(
                        prompt: "Store passphrase to verify it is you: ", timeout: .seconds(120))
                else { break }
                if store.verifyPassphrase(passphrase) { return }
                terminal.write(attempt < 3 ? "Wrong passphrase, try again.\n" : "Wrong passphrase.\n")
            }
            throw CommandFailure("user verification failed; nothing was shared")
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
