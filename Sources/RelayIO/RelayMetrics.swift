import CoreMetrics
import Prometheus
import Relay

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

/// The relay's metrics, as swift-metrics counters and gauges made by a `PrometheusMetricsFactory` over one
/// server's own `PrometheusCollectorRegistry` (not the process-wide `MetricsSystem`, which can be bootstrapped
/// once per process while tests run many relays in one), which renders `GET /metrics`.
///
/// Counters are atomics, counted as things happen; the gauges (tunnels and connections open) are set from the
/// registry's state when the metrics are read. Every labelled series is made up front, so it is there at zero.
final class RelayMetrics: Sendable {
    static let outcomes: [TunnelOutcome] = [
        .completed, .neverJoined, .lifetimeExpired, .idle, .messageTooLarge, .tooManyMessages, .bufferFull,
        .textFrame, .protocolError, .tooManyOverheadFrames, .peerNotReading,
    ]

    /// The registry the metrics are in, which renders them.
    let registry: PrometheusCollectorRegistry
    let connectionsAccepted: CoreMetrics.Counter
    let tunnelsOpened: CoreMetrics.Counter
    let tunnelsPaired: CoreMetrics.Counter
    let messagesRelayed: CoreMetrics.Counter
    let bytesRelayed: CoreMetrics.Counter
    let closed: [TunnelOutcome: CoreMetrics.Counter]
    let rejections: [Refusal: CoreMetrics.Counter]
    let tunnelsOpen: CoreMetrics.Gauge
    let tunnelsPairedNow: CoreMetrics.Gauge
    let connectionsOpen: CoreMetrics.Gauge
    /// 1 while the relay drains before it stops (`/healthz` answers 503), else 0.
    let draining: CoreMetrics.Gauge
    /// The wake channel: contacts kept, listeners connected, contact requests waiting for their phone.
    let contactsKept: CoreMetrics.Gauge
    let listenersConnected: CoreMetrics.Gauge
    let contactRequestsWaiting: CoreMetrics.Gauge
    /// `/cable/contact/…` requests by `result`: `known` (a tunnel opened) or `gone` (410).
    let contactRequestsKnown: CoreMetrics.Counter
    let contactRequestsGone: CoreMetrics.Counter
    /// Wake messages sent to listeners.
    let wakesSent: CoreMetrics.Counter
    /// Contact requests closed because no phone joined within the wake wait (close code 4404).
    let contactRequestsUnanswered: CoreMetrics.Counter

    init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
        let factory = PrometheusMetricsFactory(registry: registry)
        func counter(_ label: String, _ dimensions: [(String, String)] = []) -> CoreMetrics.Counter {
            CoreMetrics.Counter(label: label, dimensions: dimensions, factory: factory)
        }
        func gauge(_ label: String) -> CoreMetrics.Gauge { CoreMetrics.Gauge(label: label, factory: factory) }
        connectionsAccepted = counter("relay_connections_total")
        tunnelsOpened = counter("relay_tunnels_opened_total")
        tunnelsPaired = counter("relay_tunnels_paired_total")
        messagesRelayed = counter("relay_messages_relayed_total")
        bytesRelayed = counter("relay_bytes_relayed_total")
        closed = Dictionary(
            uniqueKeysWithValues: Self.outcomes.map {
                ($0, counter("relay_tunnels_closed_total", [("outcome", $0.rawValue)]))
            })
        rejections = Dictionary(
            uniqueKeysWithValues: Refusal.all.map { ($0, counter("relay_rejections_total", [("reason", $0.label)])) })
        tunnelsOpen = gauge("relay_tunnels_open")
        tunnelsPairedNow = gauge("relay_tunnels_paired")
        connectionsOpen = gauge("relay_connections_open")
        draining = gauge("relay_draining")
        contactsKept = gauge("relay_contacts")
        listenersConnected = gauge("relay_listeners_connected")
        contactRequestsWaiting = gauge("relay_contact_requests_waiting")
        contactRequestsKnown = counter("relay_contact_requests_total", [("result", "known")])
        contactRequestsGone = counter("relay_contact_requests_total", [("result", "gone")])
        wakesSent = counter("relay_wakes_sent_total")
        contactRequestsUnanswered = counter("relay_contact_requests_unanswered_total")
        for gauge in [
            tunnelsOpen, tunnelsPairedNow, connectionsOpen, draining, contactsKept, listenersConnected,
            contactRequestsWaiting,
        ] { gauge.record(0) }
    }

    /// Counts a refusal.
    func refused(_ refusal: Refusal) { rejections[refusal]?.increment() }

    /// The Prometheus text (format 0.0.4), with the gauges set to what the relay holds now.
    func text(
        openTunnels: Int, pairedTunnels: Int, openConnections: Int, isDraining: Bool,
        wakeChannel: (contacts: Int, listeners: Int, waiting: Int)
    ) -> String {
        contactsKept.record(wakeChannel.contacts)
        listenersConnected.record(wakeChannel.listeners)
        contactRequestsWaiting.record(wakeChannel.waiting)
        tunnelsOpen.record(openTunnels)
        tunnelsPairedNow.record(pairedTunnels)
        connectionsOpen.record(openConnections)
        draining.record(isDraining ? 1 : 0)
        return registry.emitToString()
    }
}
