/// What a client asks the store agent (`passkey agent`). The store is named by its resolved path; the agent keys its
/// entries by it. Nothing here carries the store key: `unlock` carries the passphrase, and the key operations carry
/// the bytes to seal, open or authenticate and get the result back.
public enum AgentRequest: Equatable, Sendable {
    /// Derive the store's key from `passphrase` and keep it; forget it after `idle` without a request for this store.
    case unlock(store: String, passphrase: [UInt8], idle: Duration)
    /// Forget the store's key (nil: every store's).
    case lock(store: String?)
    /// Whether the store's key is held, and for how long yet at most.
    case status(store: String)
    /// AES-256-GCM seal of `bytes` under the key of `use` (`StoreKeyUse`), with `aad`.
    case seal(store: String, use: UInt8, aad: [UInt8], bytes: [UInt8])
    /// AES-256-GCM open of `bytes` under the key of `use`, with `aad`.
    case open(store: String, use: UInt8, aad: [UInt8], bytes: [UInt8])
    /// HMAC-SHA-256 of `bytes` under the key of `use`.
    case authenticate(store: String, use: UInt8, bytes: [UInt8])

    /// The store the request is about; nil for `lock` of every store.
    public var store: String? {
        switch self {
        case .unlock(let store, _, _), .status(let store), .seal(let store, _, _, _), .open(let store, _, _, _),
            .authenticate(let store, _, _):
            store
        case .lock(let store): store
        }
    }
}

/// The agent's answer.
public enum AgentReply: Equatable, Sendable {
    /// `unlock` or `lock` done.
    case done
    /// `status`: the key is held, and is forgotten after `idle` without use at the latest; the person unlocked it
    /// `sinceUnlock` ago (nil from an agent of an earlier version, which did not say). Consent without a terminal
    /// counts an Allow as user verification only shortly after an unlock (`Docs/Consent.md`).
    case held(idle: Duration, sinceUnlock: Duration?)
    /// The agent does not hold this store's key (never unlocked, timed out, or locked).
    case notHeld
    /// The result of `seal`, `open` or `authenticate`.
    case bytes([UInt8])
    /// `open`: the seal or its associated data is wrong.
    case doesNotOpen
    /// `unlock`: the passphrase does not open the store.
    case wrongPassphrase
    /// The request was refused; `reason` is a sentence for people.
    case refused(String)
}

/// Why bytes are not a request or a reply.
public struct AgentCodecError: Error, Equatable, Sendable, CustomStringConvertible {
    public var reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}

/// The wire format between the agent and its clients, on a Unix stream socket: each message is a frame of a 4-byte
/// big-endian length and that many bytes (at most ``maximumFrame``); the bytes are a version (1), a tag and the
/// fields, each a 4-byte big-endian length and its bytes. Parsing is strict: a wrong version or tag, a field count
/// other than the tag's, a field longer than its bound, trailing bytes, a path or message that is not UTF-8 are all
/// refused, never guessed at.
public enum AgentCodec {
    public static let version: UInt8 = 1
    /// The largest frame either side accepts: 1 MiB (the largest sealed side file a store keeps is far smaller).
    public static let maximumFrame = 1 << 20
    /// The longest store path.
    public static let maximumPath = 4096
    /// The longest passphrase.
    public static let maximumPassphrase = 1024
    /// The longest refusal message.
    public static let maximumMessage = 1024

    // MARK: Frames

    /// `body` with its 4-byte length in front.
    public static func frame(_ body: [UInt8]) -> [UInt8] {
        bigEndian(UInt32(body.count)) + body
    }

    /// The length a frame header announces, refused when over ``maximumFrame``.
    public static func frameLength(_ header: [UInt8]) throws(AgentCodecError) -> Int {
        guard header.count == 4 else { throw AgentCodecError("a frame header is 4 bytes") }
        let length = header.reduce(0) { ($0 << 8) | Int($1) }
        guard length <= maximumFrame else {
            throw AgentCodecError("a message of \(length) bytes is longer than the \(maximumFrame) allowed")
        }
        return length
    }

    // MARK: Requests

    private enum RequestTag: UInt8 {
        case unlock = 1, lock, status, seal, open, authenticate
    }

    public static func encode(_ request: AgentRequest) -> [UInt8] {
        switch request {
        case .unlock(let store, let passphrase, let idle):
            message(RequestTag.unlock.rawValue, [Array(store.utf8), passphrase, bigEndian(seconds(idle))])
        case .lock(let store):
            message(RequestTag.lock.rawValue, [Array((store ?? "").utf8)])
        case .status(let store):
            message(RequestTag.status.rawValue, [Array(store.utf8)])
        case .seal(let store, let use, let aad, let bytes):
            message(RequestTag.seal.rawValue, [Array(store.utf8), [use], aad, bytes])
        case .open(let store, let use, let aad, let bytes):
            message(RequestTag.open.rawValue, [Array(store.utf8), [use], aad, bytes])
        case .authenticate(let store, let use, let bytes):
            message(RequestTag.authenticate.rawValue, [Array(store.utf8), [use], bytes])
        }
    }

    public static func decodeRequest(_ body: [UInt8]) throws(AgentCodecError) -> AgentRequest {
        let (tagByte, fields) = try parse(body)
        guard let tag = RequestTag(rawValue: tagByte) else { throw AgentCodecError("unknown request \(tagByte)") }
        switch tag {
        case .unlock:
            try expect(fields, 3)
            guard fields[1].count <= maximumPassphrase, !fields[1].isEmpty else {
                throw AgentCodecError("the passphrase is empty or too long")
            }
            guard fields[2].count == 4 else { throw AgentCodecError("the duration is 4 bytes") }
            let seconds = fields[2].reduce(UInt32(0)) { ($0 << 8) | UInt32($1) }
            return .unlock(store: try path(fields[0]), passphrase: fields[1], idle: .seconds(seconds))
        case .lock:
            try expect(fields, 1)
            return .lock(store: fields[0].isEmpty ? nil : try path(fields[0]))
        case .status:
            try expect(fields, 1)
            return .status(store: try path(fields[0]))
        case .seal, .open:
            try expect(fields, 4)
            let (store, use) = (try path(fields[0]), try useByte(fields[1]))
            return tag == .seal
                ? .seal(store: store, use: use, aad: fields[2], bytes: fields[3])
                : .open(store: store, use: use, aad: fields[2], bytes: fields[3])
        case .authenticate:
            try expect(fields, 3)
            return .authenticate(store: try path(fields[0]), use: try useByte(fields[1]), bytes: fields[2])
        }
    }

    // MARK: Replies

    private enum ReplyTag: UInt8 {
        case done = 1, held, notHeld, bytes, doesNotOpen, wrongPassphrase, refused
    }

    public static func encode(_ reply: AgentReply) -> [UInt8] {
        switch reply {
        case .done: message(ReplyTag.done.rawValue, [])
        case .held(let idle, let sinceUnlock):
            message(
                ReplyTag.held.rawValue,
                [bigEndian(seconds(idle))] + (sinceUnlock.map { [bigEndian(seconds($0))] } ?? []))
        case .notHeld: message(ReplyTag.notHeld.rawValue, [])
        case .bytes(let bytes): message(ReplyTag.bytes.rawValue, [bytes])
        case .doesNotOpen: message(ReplyTag.doesNotOpen.rawValue, [])
        case .wrongPassphrase: message(ReplyTag.wrongPassphrase.rawValue, [])
        case .refused(let reason):
            message(ReplyTag.refused.rawValue, [Array(reason.utf8.prefix(maximumMessage))])
        }
    }

    public static func decodeReply(_ body: [UInt8]) throws(AgentCodecError) -> AgentReply {
        let (tagByte, fields) = try parse(body)
        guard let tag = ReplyTag(rawValue: tagByte) else { throw AgentCodecError("unknown reply \(tagByte)") }
        switch tag {
        case .done: try expect(fields, 0); return .done
        case .held:
            // Two fields; one from an agent of an earlier version, which did not say when it was unlocked.
            guard fields.count == 1 || fields.count == 2 else {
                throw AgentCodecError("the message has \(fields.count) fields instead of 2")
            }
            guard fields.allSatisfy({ $0.count == 4 }) else { throw AgentCodecError("the duration is 4 bytes") }
            let durations = fields.map { Duration.seconds($0.reduce(UInt32(0)) { ($0 << 8) | UInt32($1) }) }
            return .held(idle: durations[0], sinceUnlock: durations.count == 2 ? durations[1] : nil)
        case .notHeld: try expect(fields, 0); return .notHeld
        case .bytes: try expect(fields, 1); return .bytes(fields[0])
        case .doesNotOpen: try expect(fields, 0); return .doesNotOpen
        case .wrongPassphrase: try expect(fields, 0); return .wrongPassphrase
        case .refused:
            try expect(fields, 1)
            guard fields[0].count <= maximumMessage, let reason = String(validating: fields[0], as: UTF8.self) else {
                throw AgentCodecError("the refusal is not a short UTF-8 sentence")
            }
            return .refused(reason)
        }
    }

    // MARK: Parts

    private static func message(_ tag: UInt8, _ fields: [[UInt8]]) -> [UInt8] {
        var bytes: [UInt8] = [version, tag]
        for field in fields { bytes += bigEndian(UInt32(field.count)) + field }
        return bytes
    }

    private static func parse(_ body: [UInt8]) throws(AgentCodecError) -> (UInt8, [[UInt8]]) {
        guard body.count <= maximumFrame else { throw AgentCodecError("the message is too long") }
        guard body.count >= 2 else { throw AgentCodecError("the message is too short") }
        guard body[0] == version else { throw AgentCodecError("unknown protocol version \(body[0])") }
        var fields: [[UInt8]] = []
        var index = 2
        while index < body.count {
            guard body.count - index >= 4, fields.count < 8 else {
                throw AgentCodecError("the message has a truncated or extra field")
            }
            let length = body[index..<index + 4].reduce(0) { ($0 << 8) | Int($1) }
            index += 4
            guard length <= body.count - index else { throw AgentCodecError("a field runs past the message") }
            fields.append(Array(body[index..<index + length]))
            index += length
        }
        return (body[1], fields)
    }

    private static func expect(_ fields: [[UInt8]], _ count: Int) throws(AgentCodecError) {
        guard fields.count == count else {
            throw AgentCodecError("the message has \(fields.count) fields instead of \(count)")
        }
    }

    private static func path(_ bytes: [UInt8]) throws(AgentCodecError) -> String {
        guard !bytes.isEmpty, bytes.count <= maximumPath, !bytes.contains(0), bytes.first == UInt8(ascii: "/"),
            let path = String(validating: bytes, as: UTF8.self)
        else { throw AgentCodecError("the store is not an absolute path") }
        return path
    }

    private static func useByte(_ bytes: [UInt8]) throws(AgentCodecError) -> UInt8 {
        guard bytes.count == 1 else { throw AgentCodecError("the key use is one byte") }
        return bytes[0]
    }

    private static func seconds(_ duration: Duration) -> UInt32 {
        UInt32(clamping: max(0, duration.components.seconds))
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        [
            UInt8(value >> 24), UInt8(truncatingIfNeeded: value >> 16), UInt8(truncatingIfNeeded: value >> 8),
            UInt8(truncatingIfNeeded: value),
        ]
    }
}
