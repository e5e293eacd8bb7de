import ArgumentParser
import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// The ceiling's backend in `passkey-bench relay --cluster` (hidden): the least any tunnel relay must do. Each
/// connection first sends one line, a 32-character tunnel ID and `A` or `C`, and is answered `ok {index}`; two
/// connections with the same tunnel ID are then joined, and whatever either sends is copied to the other as it
/// comes, byte for byte. No WebSocket framing, no unmasking, no limits, no back-pressure, no timeouts.
///
/// Prints `listening on 127.0.0.1:PORT` when it listens and exits at the end of its standard input.
struct EchoPairServer: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "echo-pair-server",
        abstract: "Joins connections in pairs by a tunnel ID line and copies bytes between them.",
        shouldDisplay: false
    )

    @Option(help: "Port to listen on, on 127.0.0.1 (0 picks a free one).") var port = 0
    @Option(help: "This server's number, sent back in every answer.") var index = 1

    func run() async throws {
        _ = RelayBench.raiseOpenFileLimit(to: 1_048_576)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let waiting = WaitingSides()
        let answer = "ok \(index)\n"
        let server = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 4096)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(EchoPairHandler(waiting: waiting, answer: answer))
                }
            }
            .bind(host: "127.0.0.1", port: port).get()
        writeLine("listening on 127.0.0.1:\(server.localAddress?.port ?? 0)")
        while await readStandardInputLine() != nil {}
        Foundation.exit(0)
    }
}

/// First sides of tunnels whose second side has not come yet, by tunnel ID.
final class WaitingSides: Sendable {
    private let sides = Mutex<[String: any Channel]>([:])

    /// The side waiting under `tunnelID`, taken away; or nil, and `channel` now waits under it.
    func join(_ tunnelID: String, _ channel: any Channel) -> (any Channel)? {
        sides.withLock { sides in
            if let first = sides.removeValue(forKey: tunnelID) { return first }
            sides[tunnelID] = channel
            return nil
        }
    }

    func leave(_ tunnelID: String, _ channel: any Channel) {
        sides.withLock { sides in
            if sides[tunnelID] === channel { sides[tunnelID] = nil }
        }
    }
}

/// Sent to the first side of a tunnel when its second side joins.
struct PeerJoined: Sendable {
    let peer: any Channel
}

final class EchoPairHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// 32 characters of tunnel ID, the side's letter, a newline.
    static let lineLength = 34

    private let waiting: WaitingSides
    private let answer: String
    private var line: [UInt8] = []
    private var tunnelID: String?
    private var peer: (any Channel)?
    /// What arrives between the line and the peer's joining.
    private var early: ByteBuffer?

    init(waiting: WaitingSides, answer: String) {
        self.waiting = waiting
        self.answer = answer
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = Self.unwrapInboundIn(data)
        if tunnelID == nil {
            let needed = Self.lineLength - line.count
            line += buffer.readBytes(length: min(needed, buffer.readableBytes)) ?? []
            guard line.count == Self.lineLength else { return }
            let tunnelID = String(decoding: line.prefix(32), as: UTF8.self)
            self.tunnelID = tunnelID
            context.writeAndFlush(Self.wrapOutboundOut(context.channel.allocator.buffer(string: answer)), promise: nil)
            if let first = waiting.join(tunnelID, context.channel) {
                peer = first
                first.pipeline.fireUserInboundEventTriggered(PeerJoined(peer: context.channel))
            }
            guard buffer.readableBytes > 0 else { return }
        }
        if let peer {
            peer.write(buffer, promise: nil)
        } else {
            early.setOrWriteBuffer(&buffer)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        peer?.flush()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard let joined = event as? PeerJoined else { return context.fireUserInboundEventTriggered(event) }
        peer = joined.peer
        if let early {
            joined.peer.writeAndFlush(early, promise: nil)
            self.early = nil
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let tunnelID { waiting.leave(tunnelID, context.channel) }
        peer?.close(promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
