import NIOCore
import NIOPosix
import Proximity
import Synchronization

/// The simulated radio (`--ble sim:HOST:PORT`): one UDP datagram per advertisement, carrying exactly the LE
/// advertising data a controller would put on the air (AD structures, at most 31 bytes). The scanner binds the
/// port; advertisers send to it. Docs/Proximity.md describes the format for other tools.
public enum SimulatedRadio {
    /// How often an advertiser repeats its advertisement, as phones do about every 100 ms.
    public static let defaultInterval = Duration.milliseconds(100)

    /// An advertiser that sends to `host:port`. The first datagram leaves at once, then one every `interval`;
    /// an interval of zero sends once.
    public static func advertiser(
        host: String = ProximityMode.defaultSimulatedHost,
        port: Int = ProximityMode.defaultSimulatedPort,
        interval: Duration = defaultInterval,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws(ProximityError) -> SimulatedAdvertiser {
        let target: SocketAddress
        do {
            target = try SocketAddress.makeAddressResolvingHost(host, port: port)
        } catch {
            throw .unavailable("simulated radio address \(host):\(port) does not resolve: \(error)")
        }
        let channel: any Channel
        do {
            channel = try await DatagramBootstrap(group: group)
                .bind(host: target.protocol == .inet6 ? "::1" : "127.0.0.1", port: 0).get()
        } catch {
            throw .unavailable("cannot open a UDP socket for the simulated radio: \(error)")
        }
        return SimulatedAdvertiser(channel: channel, target: target, interval: interval)
    }

    /// A scanner listening on `host:port` (port 0 picks one; see `SimulatedScanner.port`).
    public static func scanner(
        host: String = ProximityMode.defaultSimulatedHost,
        port: Int = ProximityMode.defaultSimulatedPort,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws(ProximityError) -> SimulatedScanner {
        let callback = CallbackBox()
        do {
            let channel = try await DatagramBootstrap(group: group)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(AdvertDatagramHandler(callback: callback))
                    }
                }
                .bind(host: host, port: port).get()
            return SimulatedScanner(channel: channel, callback: callback)
        } catch let error as IOError where error.errnoCode == EADDRINUSE {
            throw .unavailable(
                "the simulated radio's port \(host):\(port) is in use (another scanner listens there); "
                    + "pick another with --ble sim:HOST:PORT")
        } catch {
            throw .unavailable("cannot listen on the simulated radio at \(host):\(port): \(error)")
        }
    }
}

/// Sends one advertisement to the simulated radio's port, repeating until stopped.
public final class SimulatedAdvertiser: ProximityAdvertiser {
    private let channel: any Channel
    private let target: SocketAddress
    private let interval: Duration
    private let repeating = Mutex<RepeatedTask?>(nil)

    init(channel: any Channel, target: SocketAddress, interval: Duration) {
        self.channel = channel
        self.target = target
        self.interval = interval
    }

    public func startAdvertising(_ advertisingData: [UInt8]) async throws(ProximityError) {
        guard advertisingData.count <= 31 else { throw .advertisingDataTooLong(advertisingData.count) }
        await stopAdvertising()
        let channel = channel
        let envelope = AddressedEnvelope(
            remoteAddress: target, data: channel.allocator.buffer(bytes: advertisingData))
        // A lost datagram is a missed advertisement, as on a radio: send errors (no scanner yet) are ignored.
        if interval == .zero {
            channel.writeAndFlush(envelope, promise: nil)
            return
        }
        let task = channel.eventLoop.scheduleRepeatedTask(
            initialDelay: .zero, delay: TimeAmount(interval)
        ) { _ in
            channel.writeAndFlush(envelope, promise: nil)
        }
        let previous = repeating.withLock { repeating in
            defer { repeating = task }
            return repeating
        }
        previous?.cancel()
    }

    public func stopAdvertising() async {
        repeating.withLock { repeating in
            defer { repeating = nil }
            return repeating
        }?.cancel()
    }

    public func close() async {
        await stopAdvertising()
        try? await channel.close()
    }
}

/// Receives advertisements on the simulated radio's port.
public final class SimulatedScanner: ProximityScanner {
    private let channel: any Channel
    private let callback: CallbackBox

    init(channel: any Channel, callback: CallbackBox) {
        self.channel = channel
        self.callback = callback
    }

    /// The bound UDP port.
    public var port: Int { channel.localAddress?.port ?? 0 }

    public func startScanning(_ onAdvert: @escaping @Sendable ([UInt8]) -> Void) async throws(ProximityError) {
        callback.set(onAdvert)
    }

    public func stopScanning() async {
        callback.set(nil)
    }

    public func close() async {
        callback.set(nil)
        try? await channel.close()
    }
}

/// Hands each datagram of advertisement size to the scanner's callback.
final class AdvertDatagramHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    private let callback: CallbackBox

    init(callback: CallbackBox) { self.callback = callback }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        // Longer datagrams are not legacy advertisements: a radio would never receive them.
        guard envelope.data.readableBytes <= 31 else { return }
        callback.deliver(Array(buffer: envelope.data))
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // ICMP errors and the like: a radio has no such thing. Keep listening.
    }
}
