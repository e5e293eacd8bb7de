import Basics
import ArgumentParser
import Foundation
import Hybrid
import Logging
import Relay
import RelayIO
import RelayTLSIO
import ServiceLifecycle
import UnixSignals

/// `passkey-relay`: a caBLE v2 tunnel server (see Docs/Relay.md).
@main
struct PasskeyRelay: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "passkey-relay",
        abstract: "Relay hybrid (caBLE v2) tunnels between a phone and a computer over WebSocket.",
        discussion: """
            Prints one line, "listening on ws://HOST:PORT" (or wss://), when ready, logs one line per tunnel on \
            standard error and serves GET /metrics and GET /healthz. SIGTERM drains: /healthz and /cable/new answer \
            503 while /cable/connect and the open tunnels go on, and the relay exits 0 once the last tunnel has \
            ended (at the latest after --tunnel-lifetime). A second SIGTERM, or SIGINT, stops at once.

            A failure prints one line, `passkey-relay: what failed: why`, and exits 1 (64 for wrong arguments), \
            as `passkey` does (Docs/ExitStatus.md); -v adds the underlying library's own words on a second line.
            """,
        version: PackageVersion.text
    )

    @Option(help: "Address and port to listen on; port 0 picks a free port.") var listen = "127.0.0.1:8080"
    @Option(help: "PEM certificate chain: serve wss (needs --tls-key).", completion: .file(extensions: ["pem", "crt"]))
    var tlsCert: String?
    @Option(help: "PEM private key of --tls-cert.", completion: .file(extensions: ["pem", "key"])) var tlsKey: String?
    @Option(
        help: ArgumentHelp(
            "This instance's routing ID, 6 hex digits, handed out on every /cable/new (default: random).",
            valueName: "hex"))
    var routingID: String?
    @Option(
        help: ArgumentHelp(
            "Instance number in a cluster (0-16777215); the routing ID is the number as 3 bytes (1 is 000001).",
            valueName: "n"))
    var instance: Int?
    @Flag(help: "Print the routing ID and the 4 characters every contact ID of this instance starts with, then exit.")
    var printRoutingID = false
    @Option(help: "Seconds a tunnel may live after /cable/new.") var tunnelLifetime: Double = 120
    @Option(help: "Seconds without a message before a tunnel is closed.") var idleTimeout: Double = 60
    @Option(help: "Largest binary message relayed, in bytes.") var maxMessageBytes = 16 * 1024
    @Option(help: "Most messages one side may send over a tunnel's life.") var maxMessagesPerSide = 16
    @Option(help: "Bytes held for a peer that has not joined yet.") var maxBufferedBytes = 64 * 1024
    @Option(help: "Tunnels open at once.") var maxTunnels = 1024
    @Option(help: "Connections at once from one source network (WebSocket, and separately HTTP-stage).")
    var maxConnectionsPerAddress = 16
    @Option(help: "Percent of --max-tunnels kept for source networks that hold no tunnel yet.")
    var reservedTunnelPercent = 25
    @Option(help: "Connections in the HTTP stage at once, from all sources together.")
    var maxPendingConnections = 1024
    @Option(help: "Pings, pongs, fragments and empty frames one WebSocket connection may send.")
    var maxOverheadFrames = 1024
    @Option(
        help: ArgumentHelp(
            "Seconds a side may leave unread what the relay writes to it (the other side is paused meanwhile) "
                + "before the tunnel is closed with 1008."))
    var stalledPeerTimeout: Double = 10
    @Option(help: "Leading bits of an IPv4 source address counted as one client by the per-address limits.")
    var ipv4PrefixLength = 24
    @Option(help: "Leading bits of an IPv6 source address counted as one client by the per-address limits.")
    var ipv6PrefixLength = 64
    @Option(
        help: ArgumentHelp(
            "A proxy whose X-Forwarded-For names the client (address or CIDR, such as 10.0.0.0/8; repeatable).",
            valueName: "cidr"))
    var trustedProxy: [String] = []
    @Option(help: "Seconds a connection may take for its TLS handshake and upgrade request.")
    var requestTimeout: Double = 10
    @Option(help: "Event loop threads (default: one per core).") var threads: Int?
    @Option(
        help: ArgumentHelp(
            "Keep linked phones' contacts in this file (JSON, 0600: hashes and sealed verifiers only); without it a "
                + "restart forgets them.", valueName: "file"), completion: .file())
    var contacts: String?
    @Flag(help: "Do not serve /cable/listen and /cable/contact (linked phones).") var noContacts = false
    @Option(help: "Days a contact may go unused (no listener, no request) before it is forgotten.")
    var contactExpiryDays: Double = 90
    @Option(help: "Seconds a /cable/contact request waits for the phone to join before closing with 4404.")
    var wakeWait: Double = 30
    @Option(help: "Seconds between heartbeats to listeners (a listener silent for three is closed).")
    var heartbeatInterval: Double = 30
    @Option(help: "Contacts kept at once.") var maxContacts = 100_000
    @Option(help: "Contacts one network (the per-address limit's prefix) may register in an hour; 4429 beyond.")
    var registrationsPerNetwork = 8
    @Option(
        help: "Log level: trace, debug, info, notice, warning, error, critical (default: info).",
        completion: .list(["trace", "debug", "info", "notice", "warning", "error", "critical"]))
    var logLevel: String?
    @Flag(
        name: .shortAndLong,
        help: "Print only the result (the \"listening on\" line) and errors: --log-level warning.")
    var quiet = false
    @Flag(
        name: .shortAndLong,
        help: "Print details: --log-level debug, and a failure's underlying cause after its line.")
    var verbose = false

    /// The log level `--log-level`, `-q` or `-v` asks for.
    var effectiveLogLevel: Logger.Level {
        if let logLevel, let level = Logger.Level(rawValue: logLevel) { return level }
        return quiet ? .warning : verbose ? .debug : .info
    }

    func validate() throws {
        _ = try parsedListen()
        _ = try parsedRoutingID()
        _ = try parsedTrustedProxies()
        guard (0...32).contains(ipv4PrefixLength) else { throw ValidationError("--ipv4-prefix-length must be 0–32") }
        guard (0...128).contains(ipv6PrefixLength) else { throw ValidationError("--ipv6-prefix-length must be 0–128") }
        guard (0...100).contains(reservedTunnelPercent) else {
            throw ValidationError("--reserved-tunnel-percent must be 0–100")
        }
        guard (tlsCert == nil) == (tlsKey == nil) else { throw ValidationError("--tls-cert and --tls-key go together") }
        for (name, value) in [
            ("--tunnel-lifetime", tunnelLifetime), ("--idle-timeout", idleTimeout),
            ("--request-timeout", requestTimeout), ("--stalled-peer-timeout", stalledPeerTimeout),
        ] {
            guard value > 0, value <= 86400 else {
                throw ValidationError("\(name) must be between 0 and 86400 seconds")
            }
        }
        for (name, value) in [
            ("--max-message-bytes", maxMessageBytes), ("--max-messages-per-side", maxMessagesPerSide),
            ("--max-buffered-bytes", maxBufferedBytes), ("--max-tunnels", maxTunnels),
            ("--max-connections-per-address", maxConnectionsPerAddress),
            ("--max-pending-connections", maxPendingConnections), ("--max-overhead-frames", maxOverheadFrames),
        ] {
            guard value > 0 else { throw ValidationError("\(name) must be at least 1") }
        }
        guard maxMessageBytes <= Int(UInt32.max) else { throw ValidationError("--max-message-bytes is too large") }
        guard contactExpiryDays > 0, contactExpiryDays <= 3650 else {
            throw ValidationError("--contact-expiry-days must be between 0 and 3650")
        }
        for (name, value) in [("--wake-wait", wakeWait), ("--heartbeat-interval", heartbeatInterval)] {
            guard value >= 0.1, value <= 3600 else {
                throw ValidationError("\(name) must be between 0.1 and 3600 seconds")
            }
        }
        guard maxContacts > 0 else { throw ValidationError("--max-contacts must be at least 1") }
        guard registrationsPerNetwork > 0 else {
            throw ValidationError("--registrations-per-network must be at least 1")
        }
        if let threads, threads < 1 { throw ValidationError("--threads must be at least 1") }
        if let logLevel, Logger.Level(rawValue: logLevel) == nil {
            throw ValidationError("unknown --log-level \(logLevel)")
        }
        if quiet && verbose { throw ValidationError("--quiet and --verbose exclude each other") }
        if logLevel != nil && (quiet || verbose) {
            throw ValidationError("--log-level goes without --quiet and --verbose, which choose a level themselves")
        }
    }

    func run() async throws {
        if printRoutingID {
            guard let routingID = try parsedRoutingID() else {
                throw ValidationError("--print-routing-id needs --routing-id or --instance")
            }
            print("\(routingID.hex) \(RelayRouting.contactIDPrefix(routingID))")
            return
        }
        let level = effectiveLogLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "passkey.relay")
        raiseOpenFileLimit()

        var configuration = RelayServerConfiguration()
        (configuration.host, configuration.port) = try parsedListen()
        configuration.routingID = try parsedRoutingID()
        configuration.limits.tunnelLifetime = .seconds(tunnelLifetime)
        configuration.limits.idleTimeout = .seconds(idleTimeout)
        configuration.limits.maximumMessageBytes = maxMessageBytes
        configuration.limits.maximumMessagesPerSide = maxMessagesPerSide
        configuration.limits.maximumBufferedBytes = maxBufferedBytes
        configuration.limits.maximumTunnels = maxTunnels
        configuration.limits.maximumConnectionsPerAddress = maxConnectionsPerAddress
        configuration.limits.reservedTunnelPercent = reservedTunnelPercent
        configuration.limits.maximumPendingConnections = maxPendingConnections
        configuration.limits.maximumOverheadFrames = maxOverheadFrames
        configuration.limits.stalledPeerTimeout = .seconds(stalledPeerTimeout)
        configuration.addressRules.ipv4PrefixLength = ipv4PrefixLength
        configuration.addressRules.ipv6PrefixLength = ipv6PrefixLength
        configuration.addressRules.trustedProxies = try parsedTrustedProxies()
        configuration.requestTimeout = .seconds(requestTimeout)
        if let threads { configuration.threads = threads }
        configuration.contacts.isEnabled = !noContacts
        configuration.contacts.file = contacts
        configuration.contacts.limits.idleExpiry = .seconds(contactExpiryDays * 86_400)
        configuration.contacts.limits.wakeWait = .seconds(wakeWait)
        configuration.contacts.limits.heartbeatInterval = .seconds(heartbeatInterval)
        configuration.contacts.limits.maximumContacts = maxContacts
        configuration.contacts.limits.registrationsPerNetwork = registrationsPerNetwork
        if let tlsCert, let tlsKey {
            configuration.tls = try RelayTLS(certificateChainFile: tlsCert, privateKeyFile: tlsKey)
        }

        // Not the default action (exit) from here on. The signals are trapped here, before `listening on` is
        // printed, and handed to the group from this one sequence: the group's own trapping starts only once
        // `run()` is under way, and a SIGTERM sent as soon as the line appeared used to fall in between and be lost
        // (issue 23, attack 8). The first SIGTERM drains; a second SIGTERM, or SIGINT, stops at once.
        signal(SIGTERM, SIG_IGN)
        signal(SIGINT, SIG_IGN)
        let signals = await UnixSignalsSequence(trapping: .sigterm, .sigint)
        let server = try await RelayServer.start(configuration, logger: logger)
        logger.info("relay started", metadata: ["routing_id": "\(server.routingID.hex)"])
        // Written straight to the file descriptor: tools wait for this line.
        FileHandle.standardOutput.write(Data("listening on \(server.baseURL)\n".utf8))

        var groupConfiguration = ServiceGroupConfiguration(
            services: [RelayService(server: server, logger: logger)], logger: logger)
        // Tunnels registered before the drain end within their lifetime; past it (and a margin), stop at once.
        groupConfiguration.maximumGracefulShutdownDuration = .seconds(tunnelLifetime) + .seconds(5)
        let group = ServiceGroup(configuration: groupConfiguration)
        let running = Task { try await group.run() }
        let handling = Task {
            var terminations = 0
            for await caught in signals {
                if caught == .sigterm { terminations += 1 }
                if caught == .sigterm && terminations == 1 {
                    logger.info("SIGTERM: draining")
                    await group.triggerGracefulShutdown()
                } else {
                    logger.info("\(caught == .sigint ? "SIGINT" : "second SIGTERM"): stopping now")
                    running.cancel()
                }
            }
        }
        defer { handling.cancel() }
        try await running.value
    }

    private func parsedListen() throws -> (String, Int) {
        guard let address = ListenAddress(listen) else {
            throw ValidationError("--listen must be HOST:PORT with a port from 0 to 65535")
        }
        return (address.host, address.port)
    }

    private func parsedTrustedProxies() throws -> [IPNetwork] {
        try trustedProxy.map { text in
            do {
                return try IPNetwork(text)
            } catch {
                throw ValidationError("--trusted-proxy \(text): \(error)")
            }
        }
    }

    private func parsedRoutingID() throws -> RoutingID? {
        switch (routingID, instance) {
        case (nil, nil):
            return nil
        case (let hex?, nil):
            guard let routingID = try? RoutingID(hex: hex) else {
                throw ValidationError("--routing-id must be 3 bytes as 6 hex digits, such as 00000A")
            }
            return routingID
        case (nil, let instance?):
            do {
                return try RelayRouting.routingID(instance: instance)
            } catch {
                throw ValidationError("--instance: \(error)")
            }
        case (_?, _?):
            throw ValidationError("--routing-id and --instance exclude each other")
        }
    }

    /// Raises the soft limit on open files to the hard limit: every tunnel holds two sockets.
    private func raiseOpenFileLimit() {
        var limit = rlimit()
        guard getrlimit(openFilesResource, &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(openFilesResource, &limit)
    }
}

extension PasskeyRelay {
    /// ArgumentParser's `main()`, except that a failure prints one line as `passkey` prints it,
    /// `passkey-relay: what failed: why` (`RelayErrorLine`), with 64 for wrong arguments and 1 otherwise. Help and
    /// the version print as ArgumentParser prints them.
    static func main() async {
        var command: any ParsableCommand
        do {
            command = try parseAsRoot()
        } catch {
            parserExit(error)
        }
        let verbose = (command as? PasskeyRelay)?.verbose ?? false
        do {
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            if String(reflecting: type(of: error)).hasPrefix("ArgumentParser.") { parserExit(error) }
            let line = RelayErrorLine(error)
            FileHandle.standardError.write(Data(line.rendered(verbose: verbose).utf8))
            Foundation.exit(1)
        }
    }

    /// Ends with one of ArgumentParser's own errors: help, the version and `ExitCode` as it ends them, a usage error
    /// as one line naming the help.
    static func parserExit(_ error: any Error) -> Never {
        let status = exitCode(for: error).rawValue
        guard status != ExitCode.success.rawValue, !(error is ExitCode) else { exit(withError: error) }
        let line = RelayErrorLine(usage: fullMessage(for: error))
        FileHandle.standardError.write(Data(line.rendered().utf8))
        Foundation.exit(status)
    }
}

/// The relay's error line, in `passkey`'s format (Docs/ExitStatus.md): `passkey-relay: what failed: why` on one
/// line, terminal-safe (`terminalSafe`, from Basics, as `passkey`'s), the underlying library's words only with
/// `--verbose`.
struct RelayErrorLine: Hashable {
    var message: String
    var detail: String?

    /// The line for `error`: the relay's own errors (`RelayServerError`: cannot listen, TLS, settings) say what
    /// failed in a person's terms; anything else only that the relay failed, its own text being the detail.
    init(_ error: any Error) {
        if let error = error as? RelayServerError {
            message = error.description
        } else {
            message = "the relay failed"
            detail = String(reflecting: error)
        }
    }

    /// A usage error as ArgumentParser words it (`Error: …`, then `Usage:` and `See '… --help'` lines): its first
    /// line without the `Error: ` prefix, and where to read about the flags.
    init(usage parserMessage: String) {
        let first =
            parserMessage.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .first { !$0.isEmpty } ?? "the arguments are wrong"
        var text = first.hasPrefix("Error: ") ? String(first.dropFirst("Error: ".count)) : first
        if text.hasSuffix(".") { text.removeLast() }
        message = text.prefix(1).lowercased() + text.dropFirst() + " (see `passkey-relay --help`)"
    }

    /// The text for standard error: one line, each part terminal-safe with its line breaks folded into `; `.
    func rendered(verbose: Bool = false) -> String {
        var text = "passkey-relay: " + Self.folded(message) + "\n"
        if verbose, let detail, !detail.isEmpty { text += "passkey-relay: detail: " + Self.folded(detail) + "\n" }
        return text
    }

    static func folded(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }.joined(separator: "; ").terminalSafe
    }
}

#if os(Linux)
    private let openFilesResource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
#else
    private let openFilesResource = RLIMIT_NOFILE
#endif
