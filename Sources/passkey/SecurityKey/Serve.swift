import Basics
import ArgumentParser
import CTAP2
import CTAPHID
import CTAPHIDIO
import ConsentIO
import Foundation
import Logging
import NIOCore
import PasskeyProvider
import PasskeyStoreIO
import TerminalIO
import UHID

extension AttestationFormat: ExpressibleByArgument {}

extension Passkey {
    struct Serve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run the authenticator as a CTAPHID device.",
            discussion: """
                With --udp, each UDP datagram on loopback carries one 64-byte CTAPHID report; prints \
                `listening on udp://HOST:PORT` when ready.

                With --uhid, creates a virtual FIDO security key through /dev/uhid for browsers and libfido2; \
                prints `virtual FIDO device created: /dev/hidrawN` (or `virtual FIDO device created (uhid)` if the \
                node is not found), then `listening on uhid`.

                With --pin-only, the key has no built-in user verification, like most hardware security keys: \
                platforms verify the user with a PIN they set (python-fido2, `fido2-token -S`, a browser's settings) \
                and ask for it, as for a YubiKey. See Docs/CTAP.md.

                With --phone, a phone stands behind the key: a sign-in this store cannot answer, and a registration \
                you send to a phone, show a QR code (on standard error; its URL as `phone: FIDO:/…` on standard \
                output) that a phone scans, and the phone answers through the key. With --phone-only every \
                registration and sign-in goes to a phone. --relay, --relay-ca, --ble and --timeout are as for \
                `passkey client`. See Docs/SecurityKey.md.

                Stops on SIGINT or SIGTERM (the uhid device disappears). See Docs/Transports.md.
                """
        )

        @OptionGroup var store: StoreOptions
        @OptionGroup var approval: ApprovalOptions
        @OptionGroup var consentOptions: ConsentOptions
        @Option(
            name: .customLong("udp"),
            help: ArgumentHelp(
                "Serve CTAPHID reports over UDP on this loopback address (port 0 picks one).", valueName: "host:port"))
        var udp: String?
        @Flag(help: "Create a virtual FIDO HID security key through /dev/uhid (Linux).") var uhid = false
        @Option(
            help: """
                Attestation statement format for new credentials: packed (self attestation, as security keys attest; \
                libfido2 and so OpenSSH need it) or none.
                """)
        var attestation: AttestationFormat = AuthenticatorConfiguration.securityKey.attestationFormat
        @Flag(
            help: """
                Offer no built-in user verification, like a security key without a fingerprint reader: platforms \
                verify the user with the PIN (set one with a platform, e.g. python-fido2 or `fido2-token -S`).
                """)
        var pinOnly = false
        @Flag(
            help: """
                Put a phone behind the key: a sign-in this store cannot answer, or a registration you send to a \
                phone, shows a QR code for a phone to scan (Docs/SecurityKey.md).
                """)
        var phone = false
        @Flag(help: "Send every registration and sign-in to a phone; the store answers none of them.")
        var phoneOnly = false
        @Flag(
            help: """
                With a phone behind the key: offer the phone to remember this computer when it scans a QR code \
                (`passkey scan --link`); later requests reach the most recently used linked phone through its relay \
                without a QR code. Links are sealed in the passkey store, as `passkey client --link` keeps them.
                """)
        var link = false
        @Option(
            name: .customLong("phone-name"),
            help: ArgumentHelp(
                "Try the linked phone with this name (as `passkey client links` lists them) instead of the most "
                    + "recently used one.", valueName: "name"))
        var phoneName: String?
        @OptionGroup var hybrid: HybridOptions

        /// Whether a phone stands behind the key, and for which requests.
        var bridgeMode: PhoneBridgeMode { phoneOnly ? .phoneOnly : phone ? .phoneFallback : .off }

        func validate() throws {
            guard (udp != nil) != uhid else { throw ValidationError("Give exactly one of --udp HOST:PORT and --uhid.") }
            guard !(phone && phoneOnly) else { throw ValidationError("Give at most one of --phone and --phone-only.") }
            guard !link || bridgeMode != .off else { throw ValidationError("--link needs --phone or --phone-only.") }
            guard phoneName == nil || bridgeMode != .off else {
                throw ValidationError("--phone-name needs --phone or --phone-only.")
            }
            guard !(pinOnly && bridgeMode != .off) else {
                throw ValidationError(
                    "--pin-only cannot go with a phone behind the key: a phone verifies the user itself.")
            }
            guard let udp else { return }
            let (host, port) = try Self.hostAndPort(udp)
            // Checked before the store is opened, so a bad address changes nothing.
            _ = try CTAPHIDUDPServer.loopbackAddress(host: host, port: port)
        }

        static func hostAndPort(_ text: String) throws -> (host: String, port: Int) {
            guard let address = ListenAddress(text) else {
                throw ValidationError("Expected HOST:PORT for --udp, for example 127.0.0.1:8765.")
            }
            return (address.host, address.port)
        }

        /// `-v` logs one line per CTAPHID transaction and per CTAP request (never payloads); `-q` only warnings
        /// and errors.
        @OptionGroup var verbosity: OutputOptions

        func run() async throws {
            let level = verbosity.level
            LoggingSystem.bootstrap { label in
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level.showsDetails ? .debug : level.showsProgress ? .notice : .warning
                return handler
            }
            // Opened before the store, so a kernel without uhid changes nothing.
            let uhidFile: UHIDFileDescriptor?
            do {
                uhidFile = try uhid ? UHIDFileDescriptor.open() : nil
            } catch {
                throw CommandFailure("\(error)")
            }
            let terminal = TerminalInterface()
            let access = store.access(terminal)
            try await access.withServingStore(create: true) { store in
                // Without a terminal (a systemd user unit), consent is asked through a notification or the queue.
                let interface = consentOptions.interface(terminal: terminal, unattended: approval.unattended)
                let key = try SecurityKeyService(
                    store: store,
                    options: SecurityKeyService.Options(
                        pinOnly: pinOnly, attestation: attestation, phoneBridge: bridgeMode != .off),
                    consent: consentOptions.consent(
                        interface: interface, approval: approval, store: store, access: access),
                    interface: interface)
                let links =
                    link || phoneName != nil
                    ? ComputerLinks(store: UnlockedStore(access: access, unlocked: store), interface: interface) : nil
                if let links, let phoneName {
                    // A name that is not linked fails now, listing the linked phones, not at the first request.
                    _ = try await links.phone(named: phoneName)
                }
                let bridge =
                    bridgeMode == .off
                    ? nil
                    : SecurityKeyBridge(
                        key: key, mode: bridgeMode, phones: try hybrid.bridgePhones(links: links, phoneName: phoneName),
                        interface: interface, unattendedReason: approval.mode.unattendedReason)
                let wink: WinkHandler = {
                    Terminal.shared.write("passkey: wink! (the platform asked the authenticator to identify itself)\n")
                }
                // With --verbose, one line per CTAP request: its shape (command, options, whether a pinUvAuthParam came)
                // and the status answered, never a value from the payload (CTAPRequestSummary).
                let requestLogger = Logger(label: "passkey.ctap")
                let handler: CBORHandler = { request, setKeepaliveStatus in
                    let response =
                        if let bridge {
                            await bridge.answer(request, keepalive: setKeepaliveStatus)
                        } else {
                            await key.answer(request, keepalive: setKeepaliveStatus)
                        }
                    requestLogger.debug(
                        "CTAP \(CTAPRequestSummary(message: request)) -> \(Self.statusName(response.first ?? 0x7F))")
                    return response
                }
                Terminal.shared.write(
                    "passkey: serving \(key.passkeyCount.counted("passkey")) from \(store.url.path)\n")
                let server: any ServingTransport
                if let uhidFile {
                    let device = try await CTAPHIDUHIDServer.start(
                        file: uhidFile, logger: Logger(label: "passkey.uhid"), wink: wink, handler: handler)
                    let node = await HidrawLookup.waitForNode(
                        matching: [
                            "HID_ID": FIDOHIDDevice.hidID, "HID_NAME": device.device.name,
                            "HID_PHYS": device.device.phys,
                        ],
                        timeout: .seconds(3))
                    ServingProcess.printLine(
                        node.map { "virtual FIDO device created: \($0)" } ?? "virtual FIDO device created (uhid)")
                    ServingProcess.printLine("listening on uhid")
                    server = device
                } else {
                    let (host, port) = try Self.hostAndPort(udp ?? "")
                    let udpServer = try await CTAPHIDUDPServer.start(
                        host: host, port: port, logger: Logger(label: "passkey.ctaphid"), wink: wink, handler: handler)
                    let address = udpServer.localAddress
                    ServingProcess.printLine("listening on udp://\(address.ipAddress ?? host):\(address.port ?? port)")
                    server = udpServer
                }

                let signals = await ServingProcess.onStopSignal { Task { await server.close() } }
                defer { signals.cancel() }
                try await server.run()
                await interface.close()
                ServingProcess.endIfInterrupted()
                Terminal.shared.write("passkey: stopped\n")
            }
        }

        /// `OK` or the status code's CTAP name and byte.
        static func statusName(_ status: UInt8) -> String {
            status == 0 ? "OK" : CTAPError(rawValue: status).description
        }
    }
}

/// What `passkey serve` runs: the UDP server or the uhid device.
private protocol ServingTransport: Sendable {
    func run() async throws
    func close() async
}

extension CTAPHIDUDPServer: ServingTransport {}
extension CTAPHIDUHIDServer: ServingTransport {}
