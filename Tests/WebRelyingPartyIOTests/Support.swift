import Crypto
import Foundation
import NIOCore
import NIOEmbedded
import NIOHTTP1
import NIOPosix
import RelyingParty
import WebRelyingPartyIO
import Synchronization
import WebRelyingParty

/// A service for `localhost` whose lines and saves are recorded, and whose saving can be made to fail.
final class Recorder: Sendable {
    static let origin = "http://localhost:8787"
    let lines = Mutex<[String]>([])
    let saved = Mutex<[RelyingPartyState]>([])
    let failSaving = Mutex(false)

    func service(state: RelyingPartyState = RelyingPartyState(), origins: Set<String> = [origin]) -> RelyingPartyService
    {
        RelyingPartyService(
            site: RelyingPartySite(
                relyingParty: WebRelyingParty(
                    configuration: .init(relyingParty: RelyingPartyEntity(id: "localhost"), origins: origins)),
                state: state),
            environment: environment())
    }

    func environment() -> RelyingPartyEnvironment {
        RelyingPartyEnvironment(
            saveState: { (state, _) throws(RelyingPartyStateError) in
                if self.failSaving.withLock({ $0 }) { throw RelyingPartyStateError(.unwritable, "disk full") }
                self.saved.withLock { $0.append(state) }
            },
            printLine: { line in self.lines.withLock { $0.append(line) } })
    }
}

/// An HTTP/1.1 response as read back from a channel.
struct HTTPAnswer {
    var status: Int
    var headers: HTTPHeaders
    var body: [UInt8]

    var json: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]) ?? [:]
    }
}

extension EmbeddedChannel {
    /// Reads one response the handler wrote as `HTTPServerResponsePart`s; nil when none is complete.
    func readResponseParts() throws -> HTTPAnswer? {
        guard case .head(let head)? = try readOutbound(as: HTTPServerResponsePart.self) else { return nil }
        var body: [UInt8] = []
        while let part = try readOutbound(as: HTTPServerResponsePart.self) {
            switch part {
            case .body(.byteBuffer(let buffer)): body += buffer.readableBytesView
            case .end: return HTTPAnswer(status: Int(head.status.code), headers: head.headers, body: body)
            default: break
            }
        }
        return nil
    }

    /// Reads every byte written so far and parses the responses in them.
    func readResponseBytes() throws -> [HTTPAnswer] {
        var bytes: [UInt8] = []
        while let buffer = try readOutbound(as: ByteBuffer.self) { bytes += buffer.readableBytesView }
        return try HTTPAnswer.parse(bytes)
    }
}

extension HTTPAnswer {
    struct ParseError: Error {}

    /// Responses with `Content-Length` bodies, back to back.
    static func parse(_ bytes: [UInt8]) throws -> [HTTPAnswer] {
        var answers: [HTTPAnswer] = []
        var rest = bytes[...]
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        while !rest.isEmpty {
            guard let end = rest.firstRange(of: separator) else { throw ParseError() }
            let lines = String(decoding: rest[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
            let statusParts = lines[0].split(separator: " ")
            guard statusParts.count >= 2, let status = Int(statusParts[1]) else { throw ParseError() }
            var headers = HTTPHeaders()
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { throw ParseError() }
                headers.add(
                    name: String(line[..<colon]),
                    value: line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
            }
            let length = Int(headers.first(name: "Content-Length") ?? "0") ?? 0
            let bodyStart = end.upperBound
            guard rest.distance(from: bodyStart, to: rest.endIndex) >= length else { throw ParseError() }
            let bodyEnd = rest.index(bodyStart, offsetBy: length)
            answers.append(HTTPAnswer(status: status, headers: headers, body: Array(rest[bodyStart..<bodyEnd])))
            rest = rest[bodyEnd...]
        }
        return answers
    }
}

/// A one-request HTTP/1.1 client over a real socket, written by hand so a test controls every byte.
enum RawHTTP {
    static func request(
        port: Int, method: String, path: String, json: [UInt8]? = nil, group: any EventLoopGroup
    ) async throws -> HTTPAnswer {
        var text = "\(method) \(path) HTTP/1.1\r\nHost: localhost:\(port)\r\nConnection: close\r\n"
        if let json { text += "Content-Type: application/json\r\nContent-Length: \(json.count)\r\n" }
        let bytes = Array((text + "\r\n").utf8) + (json ?? [])
        let received = try await exchange(port: port, bytes: bytes, group: group)
        guard let answer = try HTTPAnswer.parse(received).first else { throw HTTPAnswer.ParseError() }
        return answer
    }

    /// Sends `bytes` and returns everything read until the server closes (or resets) the connection.
    static func exchange(port: Int, bytes: [UInt8], group: any EventLoopGroup) async throws -> [UInt8] {
        let channel = try await ClientBootstrap(group: group).connect(host: "127.0.0.1", port: port) { channel in
            channel.eventLoop.makeCompletedFuture {
                try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
            }
        }
        return try await channel.executeThenClose { inbound, outbound in
            var received: [UInt8] = []
            do {
                try await outbound.write(ByteBuffer(bytes: bytes))
                for try await buffer in inbound { received += buffer.readableBytesView }
            } catch {
                // Closed or reset by the server: what arrived before is the answer.
            }
            return received
        }
    }
}

/// SHA-256 of a file's bytes, or nil when it does not exist.
func digest(of url: URL) -> [UInt8]? {
    guard let data = try? Data(contentsOf: url) else { return nil }
    return Array(SHA256.hash(data: data))
}
