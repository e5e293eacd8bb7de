import ArgumentParser
import Basics
import CTAP2
import ConsentIO
import Foundation
import Hybrid
import HybridDriver
import PasskeyProvider
import PasskeyStoreIO
import Proximity
import ProximityIO
import TerminalIO

extension Passkey {
    struct Listen: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Be the phone in the pocket: wait for linked computers to wake this phone through its relay.",
            discussion: """
                Holds a connection to the relay this phone registered with (`passkey scan --link --relay URL`), \
                proves that it owns its contact ID, and reconnects with exponential back-off when the connection \
                ends. When a linked computer asks for it (`passkey client get --phone NAME`), the relay sends a \
                wake: this phone joins the tunnel, advertises over Bluetooth and serves the request from the store, \
                asking as `passkey scan` does, or without a terminal through a desktop notification or `passkey pending` \
                (--consent; --yes for tests). Runs until SIGINT or SIGTERM; a systemd user unit \
                is in Docs/Hybrid.md ("Linked phones").
                """)

        @OptionGroup var hybrid: HybridOptions
        @OptionGroup var store: StoreOptions
        @OptionGroup var approval: ApprovalOptions
        @OptionGroup var consentOptions: ConsentOptions

        @OptionGroup var verbosity: OutputOptions

        func run() async throws {
            let terminal = TerminalInterface()
            let access = self.store.access(terminal)
            try await access.withServingStore(create: false) { store in
                let advertiser = try await Radio.advertiser(for: hybrid.mode)
                // Without a terminal (a systemd user unit), consent is asked through a notification or the queue.
                let interface = consentOptions.interface(terminal: terminal, unattended: approval.unattended)
                let service = PhoneService(
                    store: store, interface: interface,
                    consent: consentOptions.consent(
                        interface: interface, approval: approval, store: store, access: access),
                    advertiser: advertiser, radio: hybrid.mode,
                    environment: .system(tls: try hybrid.tlsConfiguration()),
                    timeouts: hybrid.timeouts)
                let relay = hybrid.tunnelServer
                let listening = Task { () async throws -> Void in try await service.listen(relay: relay) }
                let signals = await ServingProcess.onStopSignal { listening.cancel() }
                defer { signals.cancel() }
                let result = await listening.result
                await advertiser.close()
                await interface.close()
                ServingProcess.endIfInterrupted()
                try result.get()
            }
        }
    }
}
