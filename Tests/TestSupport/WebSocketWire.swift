import Foundation

/// A WebSocket frame as bytes on the wire (RFC 6455 §5.2), built and parsed by hand, independently of the NIO
/// code under test, so that a test peer can send frames no library would (unmasked, oversize, reserved bits) and
/// check exactly what it received.
public struct RawFrame: Equatable, Sendable {
    public var fin: Bool
    public var opcode: UInt8
    /// Whether the frame carried a masking key.
    public var masked: Bool
    /// The payload, unmasked.
    public var payload: [UInt8]

    public init(fin: Bool = true, opcode: UInt8, masked: Bool = false, payload: [UInt8]) {
        self.fin = fin
        self.opcode = opcode
        self.masked = masked
        self.payload = payload
    }

    /// The close code of a close frame.
    public var closeCode: UInt16? {
        guard opcode == 0x8, payload.count >= 2 else { return nil }
        return UInt16(payload[0]) << 8 | UInt16(payload[1])
    }

    /// The masking key of the frames built here.
    public static let maskingKey: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]

    // MARK: Building

    /// A frame's bytes, masked with ``maskingKey`` when `masked`, with the reserved bits `rsv` (0…7) set.
    public static func bytes(opcode: UInt8, _ payload: [UInt8], fin: Bool = true, masked: Bool, rsv: UInt8 = 0)
        -> [UInt8]
    {
        var bytes: [UInt8] = [(fin ? 0x80 : 0) | rsv << 4 | opcode]
        let maskBit: UInt8 = masked ? 0x80 : 0
        switch payload.count {
        case ..<126: bytes.append(maskBit | UInt8(payload.count))
        case ..<65536: bytes += [maskBit | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        default:
            bytes += [maskBit | 127] + (0..<8).reversed().map { UInt8(truncatingIfNeeded: payload.count >> ($0 * 8)) }
        }
        guard masked else { return bytes + payload }
        return bytes + maskingKey + payload.enumerated().map { $1 ^ maskingKey[$0 & 3] }
    }

    /// A client's frame: masked unless told otherwise.
    public static func client(
        opcode: UInt8, _ payload: [UInt8], fin: Bool = true, masked: Bool = true, rsv: UInt8 = 0
    ) -> [UInt8] {
        bytes(opcode: opcode, payload, fin: fin, masked: masked, rsv: rsv)
    }

    /// A client's binary frame (masked), as a client sends a message.
    public static func clientBinary(_ payload: [UInt8]) -> [UInt8] { client(opcode: 0x2, payload) }

    /// A server's frame: unmasked unless told otherwise.
    public static func server(
        opcode: UInt8, _ payload: [UInt8], fin: Bool = true, masked: Bool = false, rsv: UInt8 = 0
    ) -> [UInt8] {
        bytes(opcode: opcode, payload, fin: fin, masked: masked, rsv: rsv)
    }

    // MARK: Parsing

    /// The sizes of the first frame in `bytes`: its header (the masking key included) and its payload; `nil` until
    /// the whole header is there.
    public static func extent(of bytes: some RandomAccessCollection<UInt8>) -> (header: Int, payload: Int)? {
        let data = Array(bytes.prefix(14))
        guard data.count >= 2 else { return nil }
        var length = Int(data[1] & 0x7F)
        var header = 2
        if length == 126 {
            guard data.count >= 4 else { return nil }
            length = Int(data[2]) << 8 | Int(data[3])
            header = 4
        } else if length == 127 {
            guard data.count >= 10 else { return nil }
            length = data[2..<10].reduce(0) { $0 << 8 | Int($1) }
            header = 10
        }
        if data[1] & 0x80 != 0 { header += 4 }
        return (header, length)
    }

    /// Takes one whole frame from the front of `bytes`, if one is there, and unmasks its payload.
    public static func parse(_ bytes: inout ArraySlice<UInt8>) -> RawFrame? {
        guard let (header, length) = extent(of: bytes), bytes.count >= header + length else { return nil }
        let start = bytes.startIndex
        let first = bytes[start]
        let masked = bytes[start + 1] & 0x80 != 0
        let key = masked ? Array(bytes[(start + header - 4)..<(start + header)]) : [0, 0, 0, 0]
        let payload = bytes[(start + header)..<(start + header + length)].enumerated().map { $1 ^ key[$0 & 3] }
        bytes = bytes.dropFirst(header + length)
        return RawFrame(fin: first & 0x80 != 0, opcode: first & 0x0F, masked: masked, payload: payload)
    }

    /// The whole frames at the front of `bytes`.
    public static func frames(in bytes: [UInt8]) -> [RawFrame] {
        var rest = bytes[...]
        var frames: [RawFrame] = []
        while let frame = parse(&rest) { frames.append(frame) }
        return frames
    }
}

/// An HTTP response as a test peer parses it by hand: status, headers in order, and a `Content-Length` body.
public struct RawResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: String

    public init(status: Int, headers: [(name: String, value: String)], body: String) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first header called `name`, in any case.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// Takes one HTTP response (head and `Content-Length` body) from the front of `bytes`, if a whole one is there.
    public static func parse(_ bytes: inout ArraySlice<UInt8>) -> RawResponse? {
        let text = Array(bytes)
        guard let end = text.indices.dropLast(3).first(where: { text[$0..<$0 + 4] == [13, 10, 13, 10] })
        else { return nil }
        let lines = String(decoding: text[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let status = Int(lines[0].split(separator: " ").dropFirst().first ?? "") ?? 0
        let headers = lines.dropFirst().map { line -> (name: String, value: String) in
            let parts = line.split(separator: ":", maxSplits: 1)
            return (String(parts.first ?? ""), parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : "")
        }
        var response = RawResponse(status: status, headers: headers, body: "")
        let length = Int(response.header("Content-Length") ?? "0") ?? 0
        guard text.count >= end + 4 + length else { return nil }
        response.body = String(decoding: text[(end + 4)..<(end + 4 + length)], as: UTF8.self)
        bytes = bytes.dropFirst(end + 4 + length)
        return response
    }
}

/// WebSocket upgrade requests (RFC 6455 §4.1) written by hand, so that a test can leave out or spoil any part.
public enum WebSocketUpgrade {
    /// The sample key of RFC 6455 §1.3, whose accept value is `s3pPLMBiTxaQ9kYGzzhZRbK+xOo=`.
    public static let sampleKey = "dGhlIHNhbXBsZSBub25jZQ=="

    /// The request; a `nil` key, version or subprotocol list leaves that header out, and `extra` (whole header
    /// lines, each ending in CRLF) goes before the blank line.
    public static func request(
        path: String, method: String = "GET", host: String = "relay.test", protocols: String? = "fido.cable",
        key: String? = sampleKey, version: String? = "13", extra: String = ""
    ) -> String {
        var request = "\(method) \(path) HTTP/1.1\r\nHost: \(host)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        if let key { request += "Sec-WebSocket-Key: \(key)\r\n" }
        if let version { request += "Sec-WebSocket-Version: \(version)\r\n" }
        if let protocols { request += "Sec-WebSocket-Protocol: \(protocols)\r\n" }
        return request + extra + "\r\n"
    }
}
