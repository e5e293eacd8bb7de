import Basics
import ArgumentParser
import Foundation
import PasskeyStoreIO
import RelyingParty
import TerminalIO
import WebRelyingPartyIO
import WebRelyingParty
import PasskeyFilesIO
import PasskeySettings

extension Passkey {
    struct RP: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rp",
            abstract: "Be the relying party: a local web site to try passkeys in a browser.",
            subcommands: [Serve.self]
        )
    }
}

extension Passkey.RP {
    struct Serve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Serve a page and WebAuthn JSON endpoints that register and sign in with passkeys.",
            discussion: """
                Open the printed address in a browser (http://localhost is a secure context, so no certificate is \
                needed): register a user name, sign in, and see the registered passkeys. Responses are verified by \
                this package's relying-party verifier; accounts are kept in the relying party state file, the one \
                `passkey client --rp-state` uses. Prints `listening on ADDRESS` when ready (http://localhost:PORT on a loopback address: the origin to open), then one \
                `verdict …` line per verification or browser failure. SIGINT or SIGTERM stops it. See \
                Docs/RelyingParty.md.
                """
        )

        @Option(help: ArgumentHelp("Address and port to listen on; port 0 picks a free port.", valueName: "host:port"))
        var listen = "127.0.0.1:8787"
        @Option(help: "Relying party ID: the origins' host or a registrable suffix of it.") var rpID = "localhost"
        @Option(help: "Relying party name shown by authenticators (default: the RP ID).") var rpName: String?
        @Option(
            name: .customLong("origin"),
            help: ArgumentHelp(
                "An origin the page is reached at (repeatable; default: http://RP-ID:PORT).", valueName: "url"))
        var origins: [String] = []
        @Option(
            name: .customLong("host"),
            help: ArgumentHelp(
                "A further name the server answers to in the Host header (repeatable); localhost, 127.0.0.1, [::1] "
                    + "and the origins' hosts always are, any other is refused.", valueName: "name"))
        var hosts: [String] = []
        @Option(
            help: ArgumentHelp(
                "The relying party's records of registered passkeys (default: rp-state.json beside the store).",
                valueName: "file"), completion: .file(extensions: ["json"]))
        var rpState: String?
        @Option(help: "Seconds a challenge may be answered.") var challengeLifetime: Double = 300
        @Option(help: "Ceremonies kept waiting for their response; the oldest is dropped beyond this.")
        var maxPendingCeremonies = 256
        @Option(help: "Connections open at once.") var maxConnections = 64

        var stateURL: URL {
            if let rpState { return URL(fileURLWithPath: rpState) }
            return PasskeyFiles(store: URL(fileURLWithPath: checkedSettings().store.value)).relyingPartyState
        }

        func validate() throws {
            let (_, port) = try parsedListen()
            // With port 0 the real port is known only once bound; any port checks the rest of the origin.
            _ = try checkedOrigins(port: port == 0 ? 8787 : port)
            guard challengeLifetime > 0, challengeLifetime <= 86400 else {
                throw ValidationError("--challenge-lifetime must be between 0 and 86400 seconds")
            }
            guard maxPendingCeremonies > 0 else { throw ValidationError("--max-pending-ceremonies must be at least 1") }
            guard maxConnections > 0 else { throw ValidationError("--max-connections must be at least 1") }
        }

        @OptionGroup var verbosity: OutputOptions

        func run() async throws {
            let stateFile = RelyingPartyStateFile(stateURL)
            let state: RelyingPartyState
            do {
                state = try stateFile.load()
            } catch {
                throw CommandFailure("\(error)")
            }
            var serverConfiguration = RelyingPartyServerConfiguration()
            (serverConfiguration.host, serverConfiguration.port) = try parsedListen()
            serverConfiguration.maximumConnections = maxConnections
            let entity = RelyingPartyEntity(id: rpID, name: rpName)
            var limits = CeremonyLimits()
            limits.lifetime = .seconds(challengeLifetime)
            limits.maximumPending = maxPendingCeremonies

            let (signals, continuation) = AsyncStream.makeStream(of: Void.self)
            let sources = await ServingProcess.onStopSignal { continuation.yield() }
            let server = try await RelyingPartyServer.start(serverConfiguration) {
                (port) throws(RelyingPartyServerError) in
                let origins: Set<String>
                do {
                    origins = try checkedOrigins(port: port)
                } catch {
                    throw .invalidConfiguration("\(error)")
                }
                var configuration = WebRelyingParty.Configuration(relyingParty: entity, origins: origins)
                configuration.ceremonies = limits
                return RelyingPartyService(
                    site: RelyingPartySite(
                        relyingParty: WebRelyingParty(configuration: configuration), state: state,
                        hostNames: RelyingPartySite.hostNames(origins: origins, extra: hosts)),
                    environment: .stateFile(stateFile, printLine: ServingProcess.printLine))
            }
            let origins = try checkedOrigins(port: server.port).sorted()
            let address = RelyingPartySite.addressToOpen(
                origins: Set(origins), listeningOn: server.baseURL, port: server.port)
            ServingProcess.printLine("listening on \(address)")
            Terminal.shared.write(
                "passkey: relying party \(rpID) for \(origins.joined(separator: ", ")); "
                    + "\(state.accounts(for: rpID).count.counted("account")) in \(stateURL.path)\n"
                    + "passkey: open \(origins[0]) in a browser\n")
            for await _ in signals { break }
            await server.shutdown()
            sources.cancel()
            ServingProcess.endIfInterrupted()
            Terminal.shared.write("passkey: stopped\n")
        }

        private func checkedOrigins(port: Int) throws -> Set<String> {
            do {
                return try WebRelyingParty.Configuration.origins(relyingPartyID: rpID, explicit: origins, port: port)
            } catch {
                throw ValidationError("\(error)\(origins.isEmpty ? " (give the page's address with --origin)" : "")")
            }
        }

        private func parsedListen() throws -> (String, Int) {
            guard let address = ListenAddress(listen) else {
                throw ValidationError("--listen must be HOST:PORT with a port from 0 to 65535")
            }
            return (address.host, address.port)
        }
    }
}
