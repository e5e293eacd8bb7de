import Basics
import ArgumentParser
import CTAP2
import CrossDevice
import Foundation
import Hybrid
import PasskeyStoreIO
import HybridDriver
import HybridIO
import Proximity
import ProximityIO
import QRImageIO

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
        @Option(help: ArgumentHelp("Read the QR code from this PNG or PGM image.", valueName: "file"))
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
                Remember the computer: when its QR code says it can store linking information, send it, so that it                 can reach this phone later without a QR code through --relay while `passkey listen` runs.
                """)
        var link = false
        @Option(help: ArgumentHelp("The name the computer shows for this phone (with --link).", valueName: "name"))
        var name: String?

        func validate() throws {
            if url != nil && image != nil { throw ValidationError("Give the FIDO:/ URL or --image, not both.") }
            if link && hybrid.relay == nil {
                throw ValidationError(
                    "--link needs --relay: a self-hosted passkey-relay wakes this phone (the public tunnel servers wake "
                        + "phones through their vendors' push services).")
            }
            if name != nil && !link { throw ValidationError("--name goes with --link.") }
            guard TunnelDomain.isValid(domain) else {
                throw ValidationError("--domain: \(TunnelDomainError.unassigned(domain))")
            }
        }

        func run() async throws {
            let payload = try readQRCode()
            let status = StatusLine(enabled: true)
            let kind = payload.requestType?.effective == .makeCredential ? "create a passkey" : "sign in"
            status.say("QR code read: the computer asks to \(kind)")
            let tls = try hybrid.tlsConfiguration()
            let mode = hybrid.mode
            let advertiser = try await Radio.advertiser(for: mode)
            let (lock, store) = try await store.openForServing(create: true)
            defer {
                store.close()
                withExtendedLifetime(lock) {}
            }
            // Each scan is a fresh authenticator; without --keep-open it answers one request. As a phone, it verifies
            // the user (the store passphrase) for every request it accepts.
            let authenticator = Authenticator(
                configuration: .hybridPhone(oneRequestPerSession: !keepOpen),
                environment: AuthenticatorEnvironment(
                    store: store, userInteraction: approval.makeUserInteraction(store: store),
                    reportError: { error in Terminal.shared.write("passkey: store error: \(error)\n") }))
            let environment = HybridEnvironment.system(tls: tls)
            let service = HybridAuthenticatorLink(
                advertiser: advertiser, domain: try TunnelDomain(id: domain), tunnelServer: hybrid.tunnelServer,
                timeouts: hybrid.timeouts, keepOpen: keepOpen, environment: environment,
                progress: { event in status.say(Self.describe(event, mode: mode)) })
            var linking: (offer: LinkingOffer, state: PhoneLinkState, relay: String)? = nil
            if link, let relay = hybrid.tunnelServer {
                if payload.stateAssisted == true {
                    do {
                        linking = try await Self.prepareLink(
                            relay: relay, name: name ?? PhoneLinking.defaultName, store: store,
                            environment: environment, status: status)
                    } catch {
                        await advertiser.close()
                        throw error
                    }
                } else {
                    status.say("the computer cannot store linking information (its QR code says so): not linking")
                }
            }
            let answered: Int
            let sentLinking: Bool
            do {
                (answered, sentLinking) = try await service.serve(
                    qrCode: payload, authenticator: authenticator, linkingOffer: linking?.offer)
                await advertiser.close()
            } catch {
                await advertiser.close()
                throw CommandFailure("\(error)")
            }
            if sentLinking, let linking {
                var state = linking.state
                state.links.append(
                    PhoneLink(
                        linkID: linking.offer.linkID, secret: linking.offer.linkSecret, relay: linking.relay,
                        created: Date()))
                try PhoneLinkFile.save(state, for: store)
                status.say(
                    "linked: the computer can reach this phone through \(linking.relay) while `passkey listen` runs "
                        + "(link \(linking.offer.linkID.hexString))")
            }
            status.say("done: answered \(answered) request\(answered == 1 ? "" : "s")")
        }

        /// A new link for the computer: the phone's contact at `relay` (registered now if need be), a fresh link ID
        /// and secret, the identity key.
        static func prepareLink(
            relay: TunnelServerBaseURL, name: String, store: SQLiteCredentialStore, environment: HybridEnvironment,
            status: StatusLine
        ) async throws -> (offer: LinkingOffer, state: PhoneLinkState, relay: String) {
            var state = try PhoneLinking.load(store)
            let contact = try await PhoneLinking.contact(
                at: relay, state: &state, store: store, environment: environment, status: status)
            guard let identityKey = state.identityPrivateKey else {
                throw CommandFailure(
                    "the phone's identity key in \(PhoneLinkFile.url(forStore: store.url).path) is invalid")
            }
            let offer = LinkingOffer(
                contactID: contact.contactID,
                linkID: AuthenticatorEnvironment.systemRandomBytes(LinkingInfo.linkIDLength),
                linkSecret: AuthenticatorEnvironment.systemRandomBytes(LinkingInfo.linkSecretLength),
                identityKey: identityKey, name: name)
            return (offer, state, contact.relay)
        }

        /// The payload from the argument, the image or standard input, checked before anything is opened.
        func readQRCode() throws -> QRCodePayload {
            let text = try Self.qrCodeText(url: url, image: image, prefix: QRCodePayload.prefix)
            do {
                return try QRCodePayload(url: text)
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

        static func describe(_ event: HybridAuthenticatorProgress, mode: ProximityMode) -> String {
            switch event {
            case .connecting(let url): "connecting to the relay \(Self.host(of: url))"
            case .advertising(let routingID): "tunnel registered (routing ID \(routingID)); advertising over \(mode)"
            case .handshakeDone: "computer connected: handshake done, getInfo sent"
            case .requestReceived(let command): "request received: \(CTAPCommandName.name(command))"
            case .responseSent(let status):
                "answer sent: \(status == 0 ? "OK" : CTAPError(rawValue: status).description)"
            }
        }

        static func host(of url: String) -> String {
            guard let components = URLComponents(string: url), let scheme = components.scheme,
                let host = components.host
            else { return url }
            return "\(scheme)://\(host)" + (components.port.map { ":\($0)" } ?? "")
        }
    }
}

/// Bad input found while running (not a usage mistake): printed as "Error: …", exit status 1, no usage text.
/// Progress lines on standard error, with the time since the command started.
struct StatusLine: Sendable {
    let enabled: Bool
    let start = ContinuousClock.now

    func say(_ text: String) {
        guard enabled else { return }
        let elapsed = ContinuousClock.now - start
        Terminal.shared.write(String(format: "[%6.3f s] ", Double(elapsed.inMilliseconds) / 1000) + text + "\n")
    }
}

/// Names of CTAP commands for status lines.
enum CTAPCommandName {
    static func name(_ command: UInt8) -> String { CTAPCommand(rawValue: command).name }
}
