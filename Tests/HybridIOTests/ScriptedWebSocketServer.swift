import Crypto
import Foundation
import NIOCore
import NIOPosix
import Synchronization
import TestSupport

/// A WebSocket "server" that answers the upgrade with a scripted response and then writes scripted raw
/// bytes: a hostile relay for the tunnel client's tests.
final class ScriptedWebSocketServer: Sendable {
    /// What to do with one connection.
    struct Script: Sendable {
        /// The status line and extra headers of the answer; `nil` status sends 101 with a correct accept key.
        var status = "101 Switching Protocols"
        var subprotocol: String? = "fido.cable"
        var extraHeaders: [String] = []
        /// Raw bytes to write right after the upgrade response (frames, garbage).
        var afterUpgrade: [UInt8] = []
        /// Whether to close the TCP connection after writing.
        var closeAfter = false
    }

    private let channel: any Channel
    /// Bytes the client sent after its upgrade request.
    let received = ReceivedBytes()

    var port: Int { channel.localAddress!.port! }
    var url: String { "ws://127.0.0.1:\(port)" }

    init(script: Script) async throws {
        let received = received
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ScriptHandler(script: script, received: received))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
    }

    func close() async {
        try? await channel.close()
    }
}

private final class ScriptHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let script: ScriptedWebSocketServer.Script
    let received: ReceivedBytes
    var request: [UInt8] = []
    var upgraded = false

    init(script: ScriptedWebSocketServer.Script, received: ReceivedBytes) {
        self.script = script
        self.received = received
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = Array(buffer: unwrapInboundIn(data))
        guard !upgraded else {
            received.append(bytes)
            return
        }
        request += bytes
        guard let text = String(bytes: request, encoding: .utf8), text.contains("\r\n\r\n") else { return }
        upgraded = true
        let key =
            text.split(separator: "\r\n").first { $0.lowercased().hasPrefix("sec-websocket-key:") }
            .map { $0.split(separator: ":", maxSplits: 1)[1].trimmingCharacters(in: .whitespaces) } ?? ""
        let accept = Data(Insecure.SHA1.hash(data: Data((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8)))
            .base64EncodedString()
        var response = "HTTP/1.1 \(script.status)\r\n"
        if script.status.hasPrefix("101") {
            response += "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: \(accept)\r\n"
            if let subprotocol = script.subprotocol { response += "Sec-WebSocket-Protocol: \(subprotocol)\r\n" }
        } else {
            response += "Content-Length: 0\r\n"
        }
        for header in script.extraHeaders { response += header + "\r\n" }
        response += "\r\n"
        var buffer = context.channel.allocator.buffer(string: response)
        buffer.writeBytes(script.afterUpgrade)
        let write = context.writeAndFlush(wrapOutboundOut(buffer))
        if script.closeAfter {
            write.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        received.connectionEnded()
        context.fireChannelInactive()
    }
}

/// What the client sent after its upgrade request, and a future that completes once it sent a close frame or
/// the connection ended, so tests wait for the event instead of polling.
final class ReceivedBytes: Sendable {
    struct TimedOut: Error, CustomStringConvertible {
        var description: String { "the client neither sent a close frame nor closed the connection in time" }
    }

    let bytes = Mutex<[UInt8]>([])
    private let closed = MultiThreadedEventLoopGroup.singleton.next().makePromise(of: Void.self)

    func append(_ new: [UInt8]) {
        let all = bytes.withLock { bytes in
            bytes += new
            return bytes
        }
        if RawFrame.frames(in: all).contains(where: { $0.opcode == 0x8 }) { closed.succeed() }
    }

    func connectionEnded() { closed.succeed() }

    /// Waits for the client's close frame or the end of the connection, at most `timeout`.
    func closeOrEnd(within timeout: Duration = .seconds(30)) async throws {
        let closed = closed
        let deadline = closed.futureResult.eventLoop.scheduleTask(in: TimeAmount(timeout)) { closed.fail(TimedOut()) }
        defer { deadline.cancel() }
        try await closed.futureResult.get()
    }
}
