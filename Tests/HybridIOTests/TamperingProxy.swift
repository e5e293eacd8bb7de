import NIOCore
import NIOPosix
import Synchronization
import TestSupport

/// A TCP proxy in front of a relay that flips one bit of one WebSocket message in one direction: a relay that
/// tampers with the tunnel. Everything else passes through unchanged.
final class TamperingProxy: Sendable {
    enum Direction: Sendable {
        /// Relay to client: the handshake answer (message 1), the post-handshake message (2), responses.
        case towardsClient
        /// Client to relay: the handshake (message 1), then requests.
        case fromClient
    }

    private let channel: any Channel
    private let flag = FlipFlag()

    var url: String { "ws://127.0.0.1:\(channel.localAddress!.port!)" }
    var flipped: Bool { flag.value.withLock { $0 } }

    /// Flips a bit of byte 10 (or the last byte) of the `message`-th binary message in `direction`.
    init(upstreamPort: Int, direction: Direction, message: Int) async throws {
        let flag = flag
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelOption(.autoRead, value: false)
            .childChannelInitializer { inbound in
                let fromClient = FrameTamperer(active: direction == .fromClient, message: message, flag: flag)
                let towardsClient = FrameTamperer(
                    active: direction == .towardsClient, message: message, flag: flag)
                return ClientBootstrap(group: inbound.eventLoop)
                    .connect(host: "127.0.0.1", port: upstreamPort)
                    .flatMap { outbound in
                        inbound.eventLoop.makeCompletedFuture {
                            try inbound.pipeline.syncOperations.addHandler(
                                ForwardingHandler(peer: outbound, tamperer: fromClient))
                            try outbound.pipeline.syncOperations.addHandler(
                                ForwardingHandler(peer: inbound, tamperer: towardsClient))
                            inbound.read()
                        }
                    }
            }
            .bind(host: "127.0.0.1", port: 0).get()
    }

    func close() async {
        try? await channel.close()
    }
}

/// Reads the byte stream of one direction: the HTTP head, then WebSocket frames; flips one bit of one frame.
final class FrameTamperer: @unchecked Sendable {
    // Only used on one channel's event loop.
    private let active: Bool
    private let message: Int
    private let flag: FlipFlag
    private var pending: [UInt8] = []
    private var headDone = false
    private var messages = 0

    init(active: Bool, message: Int, flag: FlipFlag) {
        self.active = active
        self.message = message
        self.flag = flag
    }

    /// The bytes ready to forward after `chunk` arrived.
    func process(_ chunk: [UInt8]) -> [UInt8] {
        guard active else { return chunk }
        pending += chunk
        var output: [UInt8] = []
        if !headDone {
            guard let end = Self.headEnd(pending) else { return [] }
            output += pending[..<end]
            pending.removeFirst(end)
            headDone = true
        }
        while let (headerLength, length) = RawFrame.extent(of: pending), pending.count >= headerLength + length {
            var frame = Array(pending[..<(headerLength + length)])
            pending.removeFirst(headerLength + length)
            if frame[0] & 0x0F == 0x2 {
                messages += 1
                if messages == message, length > 0 {
                    frame[headerLength + min(10, length - 1)] ^= 0x01
                    flag.value.withLock { $0 = true }
                }
            }
            output += frame
        }
        return output
    }

    private static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4)
        where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index + 4
        }
        return nil
    }
}

private final class ForwardingHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let peer: any Channel
    private let tamperer: FrameTamperer

    init(peer: any Channel, tamperer: FrameTamperer) {
        self.peer = peer
        self.tamperer = tamperer
    }

    func channelActive(context: ChannelHandlerContext) {
        context.read()
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = tamperer.process(Array(buffer: unwrapInboundIn(data)))
        guard !bytes.isEmpty else { return }
        peer.writeAndFlush(peer.allocator.buffer(bytes: bytes), promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.read()
    }

    func channelInactive(context: ChannelHandlerContext) {
        peer.close(promise: nil)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

final class FlipFlag: Sendable {
    let value = Mutex(false)
}
