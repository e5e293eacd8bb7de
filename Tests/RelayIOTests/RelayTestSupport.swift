import Foundation
import Logging
import Relay
import RelayIO
import Synchronization
import TestSupport
import Testing

/// Log lines a test can look at.
final class LogCapture: Sendable {
    let lines = Mutex<[(message: String, metadata: [String: String])]>([])

    var logger: Logger {
        Logger(label: "relay.test") { _ in CapturingLogHandler(capture: self) }
    }

    var tunnelLines: [[String: String]] {
        lines.withLock { $0.filter { $0.message == "tunnel closed" }.map(\.metadata) }
    }
}

struct CapturingLogHandler: LogHandler {
    let capture: LogCapture
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let flat = (event.metadata ?? [:]).mapValues { "\($0)" }
        capture.lines.withLock { $0.append(("\(event.message)", flat)) }
    }
}

/// A running relay for one test, with short limits and its log captured.
struct Relay {
    let server: RelayServer
    let log: LogCapture

    static func start(_ configure: (inout RelayServerConfiguration) -> Void = { _ in }) async throws -> Relay {
        var configuration = RelayServerConfiguration()
        configuration.port = 0
        configuration.threads = 2
        configure(&configuration)
        let log = LogCapture()
        return Relay(server: try await RelayServer.start(configuration, logger: log.logger), log: log)
    }

    var port: Int { server.port }

    /// Sends an upgrade request on a new connection and reads the answer.
    func request(_ request: String, from source: String? = nil) async throws -> (RawClient, RawResponse) {
        let client = try await RawClient.connect(port: port, from: source)
        try await client.send(request)
        return (client, try await client.readResponse())
    }

    /// Registers a tunnel; returns the authenticator side and the routing ID the relay gave it.
    func new(_ tunnelID: String = Relay.randomTunnelID()) async throws -> (RawClient, routingID: String) {
        let (client, response) = try await request(WebSocketUpgrade.request(path: "/cable/new/\(tunnelID)"))
        #expect(response.status == 101)
        #expect(response.header("Sec-WebSocket-Protocol") == "fido.cable")
        let routingID = try #require(response.header("X-caBLE-Routing-ID"))
        return (client, routingID)
    }

    /// Joins a tunnel as the client side.
    func connect(routingID: String, tunnelID: String) async throws -> RawClient {
        let (client, response) = try await request(
            WebSocketUpgrade.request(path: "/cable/connect/\(routingID)/\(tunnelID)"))
        #expect(response.status == 101)
        #expect(response.header("Sec-WebSocket-Protocol") == "fido.cable")
        #expect(response.header("X-caBLE-Routing-ID") == nil)
        return client
    }

    /// A paired tunnel.
    func pair() async throws -> (authenticator: RawClient, client: RawClient) {
        let tunnelID = Self.randomTunnelID()
        let (authenticator, routingID) = try await new(tunnelID)
        return (authenticator, try await connect(routingID: routingID, tunnelID: tunnelID))
    }

    /// The value of one sample in the metrics text, such as `relay_rejections_total{reason="badHex"}`.
    func metric(_ sample: String) -> Int? { Self.metric(sample, in: server.metricsText()) }

    /// The value of one sample in a metrics text: gauges are written as `1.0`, counters as `1`.
    static func metric(_ sample: String, in text: String) -> Int? {
        text.split(separator: "\n").first { $0.hasPrefix(sample + " ") }
            .flatMap { Double($0.split(separator: " ").last!) }.map { Int($0) }
    }

    static func randomTunnelID() -> String {
        (0..<16).map { _ in String(format: "%02X", UInt8.random(in: 0...255)) }.joined()
    }

    /// Waits until `condition` holds (for effects that happen after the bytes a test waits on).
    static func eventually(_ what: String, _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(5)
        while !condition() {
            guard ContinuousClock.now < deadline else { throw ClientError("timed out waiting for \(what)") }
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}
