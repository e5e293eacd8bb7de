import RelayCore

/// Why the relay turned a request or connection away: the `reason` label of `relay_rejections_total`.
enum Refusal: Hashable, Sendable {
    /// The registry refused the upgrade (unknown path, bad hex, duplicate, unknown tunnel, limits, …).
    case registry(RelayRejection)
    /// Not `GET`: 405.
    case methodNotAllowed
    /// A tunnel path asked for without a WebSocket upgrade: 426.
    case upgradeRequired
    /// `Sec-WebSocket-Version` missing, repeated or not 13: 426 with `Sec-WebSocket-Version: 13`.
    case unsupportedWebSocketVersion
    /// `Sec-WebSocket-Key` missing, repeated or not 16 bytes of base64: 400.
    case badWebSocketKey
    /// NIO's HTTP parser refused the bytes (garbage, oversized request line or headers): 400, then closed.
    case malformedRequest
    /// No complete upgrade request within the request timeout: closed without an answer.
    case requestTimeout
    /// Too many connections from one address still in the HTTP stage: closed at once.
    case tooManyPendingConnections
    /// ``RelayLimits/maximumPendingConnections`` connections from all addresses are in the HTTP stage: closed at once.
    case tooManyPendingConnectionsOverall

    /// Every reason, in the order the metrics list them.
    static let all: [Refusal] =
        RelayRejection.allCases.map(Refusal.registry) + [
            .methodNotAllowed, .upgradeRequired, .unsupportedWebSocketVersion, .badWebSocketKey, .malformedRequest,
            .requestTimeout, .tooManyPendingConnections, .tooManyPendingConnectionsOverall,
        ]

    /// The label value.
    var label: String {
        switch self {
        case .registry(let rejection): rejection.rawValue
        case .methodNotAllowed: "methodNotAllowed"
        case .upgradeRequired: "upgradeRequired"
        case .unsupportedWebSocketVersion: "unsupportedWebSocketVersion"
        case .badWebSocketKey: "badWebSocketKey"
        case .malformedRequest: "malformedRequest"
        case .requestTimeout: "requestTimeout"
        case .tooManyPendingConnections: "tooManyPendingConnections"
        case .tooManyPendingConnectionsOverall: "tooManyPendingConnectionsOverall"
        }
    }

    /// The HTTP status answered, when one is.
    var status: Int? {
        switch self {
        case .registry(let rejection): rejection.status
        case .methodNotAllowed: 405
        case .upgradeRequired, .unsupportedWebSocketVersion: 426
        case .badWebSocketKey, .malformedRequest: 400
        case .requestTimeout, .tooManyPendingConnections, .tooManyPendingConnectionsOverall: nil
        }
    }
}

/// The relay's counters, kept under the state lock.
struct RelayMetrics {
    static let outcomes: [TunnelOutcome] = [
        .completed, .neverJoined, .lifetimeExpired, .idle, .messageTooLarge, .tooManyMessages, .bufferFull,
        .textFrame, .protocolError, .tooManyOverheadFrames,
    ]

    var connectionsAccepted = 0
    var tunnelsOpened = 0
    var tunnelsPaired = 0
    var messagesRelayed = 0
    var bytesRelayed = 0
    var rejections: [Refusal: Int] = [:]
    var closed: [TunnelOutcome: Int] = [:]

    /// Prometheus text exposition format (version 0.0.4).
    func text(openTunnels: Int, pairedTunnels: Int, openConnections: Int) -> String {
        var lines: [String] = []
        func metric(_ name: String, _ type: String, _ help: String, _ samples: [(labels: String, value: Int)]) {
            lines.append("# HELP \(name) \(help)")
            lines.append("# TYPE \(name) \(type)")
            for sample in samples { lines.append("\(name)\(sample.labels) \(sample.value)") }
        }
        metric("relay_tunnels_open", "gauge", "Tunnels open now.", [("", openTunnels)])
        metric("relay_tunnels_paired", "gauge", "Open tunnels whose client side has joined.", [("", pairedTunnels)])
        metric("relay_connections_open", "gauge", "TCP connections open now.", [("", openConnections)])
        metric("relay_connections_total", "counter", "TCP connections accepted.", [("", connectionsAccepted)])
        metric("relay_tunnels_opened_total", "counter", "Tunnels registered with /cable/new.", [("", tunnelsOpened)])
        metric("relay_tunnels_paired_total", "counter", "Tunnels joined with /cable/connect.", [("", tunnelsPaired)])
        metric(
            "relay_tunnels_closed_total", "counter", "Tunnels ended, by outcome.",
            Self.outcomes.map { ("{outcome=\"\($0.rawValue)\"}", closed[$0, default: 0]) })
        metric(
            "relay_messages_relayed_total", "counter", "Binary messages delivered to a peer.", [("", messagesRelayed)])
        metric("relay_bytes_relayed_total", "counter", "Payload bytes delivered to a peer.", [("", bytesRelayed)])
        metric(
            "relay_rejections_total", "counter", "Requests and connections refused, by reason.",
            Refusal.all.map { ("{reason=\"\($0.label)\"}", rejections[$0, default: 0]) })
        return lines.joined(separator: "\n") + "\n"
    }
}
