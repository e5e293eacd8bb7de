import Foundation
import Logging
import NIOCore
import NIOEmbedded
import Relay
import RelayIO

/// The relay's input from the network, through the pipeline `RelayServer` gives every connection, in
/// `EmbeddedChannel`s: no sockets, no threads, and time only moves when the target says so.
enum RelayTargets {
    private static let tunnelID = String(repeating: "AB", count: 16)

    private static func harness() -> RelayPipelineHarness {
        var configuration = RelayServerConfiguration()
        configuration.limits.maximumMessageBytes = 1024
        configuration.limits.maximumOverheadFrames = 64
        return RelayPipelineHarness(
            configuration: configuration,
            logger: Logger(label: "fuzz.relay", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    /// A connection from `address`, with the relay's handlers; nil when the relay refuses it.
    private static func connect(_ harness: RelayPipelineHarness, address: String) -> EmbeddedChannel? {
        let channel = EmbeddedChannel()
        guard (try? channel.connect(to: SocketAddress(ipAddress: address, port: 40_000)).wait()) != nil,
            (try? harness.configure(channel)) != nil
        else {
            _ = try? channel.finish(acceptAlreadyClosed: true)
            return nil
        }
        return channel
    }

    /// Writes `bytes` as one read and drains what the relay wrote back.
    @discardableResult
    private static func deliver(_ bytes: [UInt8], to channel: EmbeddedChannel) -> [UInt8] {
        if channel.isActive { _ = try? channel.writeInbound(channel.allocator.buffer(bytes: bytes)) }
        channel.embeddedEventLoop.run()
        var written: [UInt8] = []
        while let buffer = try? channel.readOutbound(as: ByteBuffer.self) { written += buffer.readableBytesView }
        return written
    }

    /// Closes every channel, lets the relay's timers run, and checks that it holds nothing afterwards.
    private static func finish(_ channels: [EmbeddedChannel], harness: RelayPipelineHarness) {
        for channel in channels {
            channel.embeddedEventLoop.advanceTime(by: .seconds(200))
            _ = try? channel.finish(acceptAlreadyClosed: true)
        }
        harness.tick()
        let holdings = harness.holdings
        expect(
            holdings.connections == 0 && holdings.openTunnels == 0 && holdings.pairedTunnels == 0,
            "the relay still holds \(holdings) after every connection closed")
    }

    static func upgradeRequest(_ path: String) -> [UInt8] {
        Array(
            ("GET \(path) HTTP/1.1\r\nHost: relay.example\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                + "Sec-WebSocket-Protocol: fido.cable\r\n\r\n").utf8)
    }

    /// A client frame (masked, as RFC 6455 requires of clients) with a payload under 126 bytes.
    static func clientFrame(opcode: UInt8, payload: [UInt8], final: Bool = true) -> [UInt8] {
        let mask: [UInt8] = [0x11, 0x22, 0x33, 0x44]
        let masked = payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        return [(final ? 0x80 : 0) | opcode, 0x80 | UInt8(min(payload.count, 125))] + mask + masked.prefix(125)
    }

    /// Raw HTTP/1.1 input on one connection, split into reads by the chunks; time passes at the end.
    static let http: FuzzTarget = FuzzTarget(
        name: "relay-http",
        summary: "relay HTTP input (requests, upgrades, garbage) in EmbeddedChannel: answered or closed, none kept",
        seeds: {
            [
                FuzzInput.chunks([upgradeRequest("/cable/new/\(tunnelID)")]),
                FuzzInput.chunks([upgradeRequest("/cable/connect/000102/\(tunnelID)")]),
                FuzzInput.chunks([Array("GET /metrics HTTP/1.1\r\nHost: r\r\n\r\n".utf8)]),
                FuzzInput.chunks([Array("POST /cable/new/x HTTP/1.1\r\nContent-Length: 4\r\n\r\nbody".utf8)]),
                FuzzInput.chunks(upgradeRequest("/cable/new/\(tunnelID)").map { [$0] }),
                FuzzInput.chunks([Array("GET / HTTP/1.1\r\nX-Forwarded-For: 198.51.100.7\r\n\r\n".utf8)]),
            ]
        },
        run: { input in
            let harness = harness()
            guard let channel = connect(harness, address: "192.0.2.1") else {
                fatalError("fuzz invariant broken: the first connection was refused")
            }
            var reads = FuzzInput(input)
            var count = 0
            while count < 64, let bytes = reads.chunk(), channel.isActive {
                count += 1
                deliver(bytes, to: channel)
            }
            finish([channel], harness: harness)
        })

    /// Two upgraded sides of one tunnel (`/cable/new`, then `/cable/connect` with the routing ID the relay
    /// answered); each chunk of the input is read by one side (its first byte's low bit chooses), as WebSocket
    /// frames, unless the byte says time passes (`& 6 == 2`, the chunk's next byte in seconds) or that side's TCP
    /// connection drops (`& 6 == 4`): faults at the relay's seams, after which it must still hold nothing.
    static let webSocket: FuzzTarget = FuzzTarget(
        name: "relay-websocket",
        summary: "WebSocket frames from both sides of a relay tunnel in EmbeddedChannel, with time jumps and dropped "
            + "connections: relayed or closed, none kept",
        seeds: {
            let hello = clientFrame(opcode: 0x2, payload: Array("hello".utf8))
            let ping = clientFrame(opcode: 0x9, payload: [1, 2])
            let close = clientFrame(opcode: 0x8, payload: [0x03, 0xE8])
            let fragments =
                clientFrame(opcode: 0x2, payload: [1], final: false) + clientFrame(opcode: 0x0, payload: [2])
            return [
                FuzzInput.chunks([[0] + hello, [1] + hello, [0] + ping, [1] + close]),
                FuzzInput.chunks([[1] + fragments, [0] + clientFrame(opcode: 0x1, payload: Array("text".utf8))]),
                FuzzInput.chunks([[0] + ping + ping + ping, [1] + clientFrame(opcode: 0x2, payload: [])]),
            ]
        },
        run: { input in
            let harness = harness()
            guard let authenticator = connect(harness, address: "192.0.2.1") else {
                fatalError("fuzz invariant broken: the first connection was refused")
            }
            let answer = String(
                decoding: deliver(upgradeRequest("/cable/new/\(tunnelID)"), to: authenticator), as: UTF8.self)
            guard
                let header = answer.split(separator: "\r\n").first(where: {
                    $0.lowercased().hasPrefix("x-cable-routing-id:")
                })
            else { fatalError("fuzz invariant broken: the relay did not upgrade /cable/new: \(answer.prefix(80))") }
            let routingID = header.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)
            guard let client = connect(harness, address: "198.51.100.9") else {
                fatalError("fuzz invariant broken: the second connection was refused")
            }
            let joined = deliver(upgradeRequest("/cable/connect/\(routingID)/\(tunnelID)"), to: client)
            expect(joined.starts(with: Array("HTTP/1.1 101".utf8)), "the relay did not upgrade /cable/connect")

            var reads = FuzzInput(input)
            var count = 0
            while count < 64, let chunk = reads.chunk(), let side = chunk.first {
                count += 1
                let channel = side & 1 == 0 ? authenticator : client
                switch side & 0x06 {
                case 0x02:
                    // Time passes (the next byte, in seconds) on both sides: idle and stall timers fire.
                    let seconds = Int64(chunk.dropFirst().first ?? 0)
                    for side in [authenticator, client] {
                        side.embeddedEventLoop.advanceTime(by: .seconds(seconds))
                        deliver([], to: side)
                    }
                    harness.tick()
                case 0x04:
                    // The side's TCP connection drops, mid-message or not.
                    _ = try? channel.close().wait()
                    channel.embeddedEventLoop.run()
                default:
                    deliver(Array(chunk.dropFirst()), to: channel)
                }
            }
            finish([authenticator, client], harness: harness)
        })
}
