import Hybrid
import HybridDriver
import HybridIO
import Proximity
import Synchronization

/// One end of an in-memory tunnel: what one end sends, the other receives. With `timersExpireAtOnce`, a receive
/// with a time limit and nothing queued times out at once, as if the time had passed: timer tests need no sleep. A
/// receive whose task is cancelled ends the tunnel, as the real one does (`TunnelInboundReader`), and returns nil.
public final class FakeTunnel: HybridTunnel {
    private struct State {
        var queue: [[UInt8]] = []
        var closed = false
        var waiter: CheckedContinuation<[UInt8]?, Never>?
        var peer: FakeTunnel?
        var sent = 0
        var limits: [Duration?] = []
    }

    public let routingIDHeader: String?
    public let timersExpireAtOnce: Bool
    private let state = Mutex(State())

    public init(routingIDHeader: String? = nil, timersExpireAtOnce: Bool = false) {
        self.routingIDHeader = routingIDHeader
        self.timersExpireAtOnce = timersExpireAtOnce
    }

    /// Two connected ends.
    public static func pair(routingIDHeader: String?) -> (phone: FakeTunnel, client: FakeTunnel) {
        let phone = FakeTunnel(routingIDHeader: routingIDHeader)
        let client = FakeTunnel()
        phone.state.withLock { $0.peer = client }
        client.state.withLock { $0.peer = phone }
        return (phone, client)
    }

    public var isClosed: Bool { state.withLock { $0.closed } }
    public var sentCount: Int { state.withLock { $0.sent } }
    /// The time limit of every receive, in order (`nil`: no timer was running).
    public var receiveLimits: [Duration?] { state.withLock { $0.limits } }

    public func send(_ message: [UInt8]) async throws(TunnelError) {
        let peer = try state.withLock { (state) throws(TunnelError) -> FakeTunnel? in
            guard !state.closed else { throw .connectionFailed(.closed) }
            state.sent += 1
            return state.peer
        }
        peer?.deliver(message)
    }

    public func receive(timeout: Duration?) async throws(TunnelError) -> [UInt8]? {
        enum Next {
            case message([UInt8]?)
            case timedOut
            case wait
        }
        let next = state.withLock { state -> Next in
            state.limits.append(timeout)
            if !state.queue.isEmpty { return .message(state.queue.removeFirst()) }
            if state.closed { return .message(nil) }
            return timeout != nil && timersExpireAtOnce ? .timedOut : .wait
        }
        switch next {
        case .message(let message): return message
        case .timedOut: throw .timedOut("for the test's timer")
        case .wait:
            return await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    let now = state.withLock { state -> [UInt8]?? in
                        if !state.queue.isEmpty { return .some(state.queue.removeFirst()) }
                        if state.closed { return .some(nil) }
                        state.waiter = continuation
                        return .none
                    }
                    if let now { continuation.resume(returning: now) }
                }
            } onCancel: {
                if let peer = closeThisEnd() { Task { await peer.peerClosed() } }
            }
        }
    }

    public func close() async {
        await closeThisEnd()?.peerClosed()
    }

    /// Closes this end and wakes its waiting receive; returns the peer to tell, if it was not told yet.
    private func closeThisEnd() -> FakeTunnel? {
        let (waiter, peer) = state.withLock { state in
            let waiter = state.waiter
            state.waiter = nil
            let peer = state.closed ? nil : state.peer
            state.closed = true
            return (waiter, peer)
        }
        waiter?.resume(returning: nil)
        return peer
    }

    private func peerClosed() async {
        let waiter = state.withLock { state in
            state.closed = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    private func deliver(_ message: [UInt8]) {
        let waiter = state.withLock { state -> CheckedContinuation<[UInt8]?, Never>? in
            guard !state.closed else { return nil }
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.queue.append(message)
            return nil
        }
        waiter?.resume(returning: message)
    }
}

/// A relay in memory: `/cable/new/{tunnel ID}` gets the phone's end with routing ID 0A0B0C, and
/// `/cable/connect/0A0B0C/{tunnel ID}` the client's end of the same tunnel. Records every URL opened.
public final class FakeRelay: Sendable {
    private let state = Mutex<(tunnels: [String: FakeTunnel], opened: [String])>(([:], []))
    public let routingIDHeader: String?

    public init(routingIDHeader: String? = "0A0B0C") {
        self.routingIDHeader = routingIDHeader
    }

    public var opened: [String] { state.withLock { $0.opened } }

    public func open(_ url: String) throws(TunnelError) -> any HybridTunnel {
        let tunnelID = String(url.split(separator: "/").last ?? "")
        return try state.withLock { (state) throws(TunnelError) -> any HybridTunnel in
            state.opened.append(url)
            if url.contains("/cable/new/") {
                let (phone, client) = FakeTunnel.pair(routingIDHeader: routingIDHeader)
                state.tunnels[tunnelID] = client
                return phone
            }
            guard url.contains("/cable/connect/0A0B0C/"), let client = state.tunnels.removeValue(forKey: tunnelID)
            else { throw .refused(status: 404) }
            return client
        }
    }
}

/// The air between one advertiser and one scanner in the same process: every advertisement reaches the scanner
/// while it scans (once per start), after the noise adverts of other devices.
public final class FakeAir: ProximityAdvertiser, ProximityScanner {
    private struct State {
        var onAdvert: (@Sendable ([UInt8]) -> Void)?
        var advertising: [UInt8]?
        var starts = 0
        var stops = 0
    }

    private let state = Mutex(State())
    public let noise: [[UInt8]]

    public init(noise: [[UInt8]] = []) {
        self.noise = noise
    }

    public var advertisingStarts: Int { state.withLock { $0.starts } }
    public var isAdvertising: Bool { state.withLock { $0.advertising != nil } }
    public var isScanning: Bool { state.withLock { $0.onAdvert != nil } }

    public func startAdvertising(_ advertisingData: [UInt8]) async throws(ProximityError) {
        let onAdvert = state.withLock { state in
            state.advertising = advertisingData
            state.starts += 1
            return state.onAdvert
        }
        for advert in noise { onAdvert?(advert) }
        onAdvert?(advertisingData)
    }

    public func stopAdvertising() async { state.withLock { $0.advertising = nil } }

    public func startScanning(_ onAdvert: @escaping @Sendable ([UInt8]) -> Void) async throws(ProximityError) {
        let advertising = state.withLock { state in
            state.onAdvert = onAdvert
            return state.advertising
        }
        if let advertising { onAdvert(advertising) }
    }

    public func stopScanning() async { state.withLock { $0.onAdvert = nil } }

    public func close() async {}
}
