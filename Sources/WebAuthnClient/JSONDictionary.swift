import Basics
import JSON

/// A JSON object read as a WebIDL dictionary, with typed errors that name each member's path
/// (`authenticatorSelection.userVerification`).
///
/// Stricter than WebIDL's conversions in one way, on purpose: a JavaScript page would turn `5` into `"5"` for a
/// `DOMString` member, or `"false"` into `true` for a `boolean`; here a member of the wrong JSON type is a
/// `TypeError`, since a server that sends one has a bug worth seeing. `null` counts as absent, so it is accepted for
/// optional members and refused for required ones.
struct JSONDictionary {
    let members: [JSONMember]
    /// The path of this object, ending in `.` (empty at the top).
    let path: String

    init(_ value: JSONValue, path: String) throws(ClientError) {
        guard case .object(let members) = value else {
            throw ClientError(.wrongType(path.isEmpty ? "the options" : String(path.dropLast()), expected: "an object"))
        }
        self.members = members
        self.path = path
    }

    func name(_ key: String) -> String { path + key }

    /// The member, or nil when it is absent or null.
    func value(_ key: String) -> JSONValue? {
        guard let value = members.first(where: { $0.key == key })?.value, value != .null else { return nil }
        return value
    }

    func required(_ key: String) throws(ClientError) -> JSONValue {
        guard let value = value(key) else { throw ClientError(.missingMember(name(key))) }
        return value
    }

    func dictionary(_ key: String) throws(ClientError) -> JSONDictionary? {
        guard let value = value(key) else { return nil }
        return try JSONDictionary(value, path: name(key) + ".")
    }

    func requiredDictionary(_ key: String) throws(ClientError) -> JSONDictionary {
        try JSONDictionary(try required(key), path: name(key) + ".")
    }

    /// A `DOMString` of at most `maximumBytes` bytes of UTF-8.
    func string(_ key: String, maximumBytes: Int = JSONDictionary.maximumStringBytes) throws(ClientError) -> String? {
        guard let value = value(key) else { return nil }
        return try Self.string(value, path: name(key), maximumBytes: maximumBytes)
    }

    func requiredString(_ key: String, maximumBytes: Int = JSONDictionary.maximumStringBytes) throws(ClientError)
        -> String
    {
        try Self.string(try required(key), path: name(key), maximumBytes: maximumBytes)
    }

    static func string(_ value: JSONValue, path: String, maximumBytes: Int) throws(ClientError) -> String {
        guard case .string(let text) = value else { throw ClientError(.wrongType(path, expected: "a string")) }
        guard text.utf8.count <= maximumBytes else {
            throw ClientError(.outOfBounds(path, "longer than \(maximumBytes) bytes"))
        }
        return text
    }

    func bool(_ key: String) throws(ClientError) -> Bool? {
        guard let value = value(key) else { return nil }
        guard case .bool(let flag) = value else { throw ClientError(.wrongType(name(key), expected: "a boolean")) }
        return flag
    }

    /// A WebIDL `long` or `unsigned long`: a number, truncated toward zero as WebIDL converts it, within `range`.
    func integer(_ key: String, in range: ClosedRange<Int64>) throws(ClientError) -> Int64? {
        guard let value = value(key) else { return nil }
        return try Self.integer(value, path: name(key), in: range)
    }

    static func integer(_ value: JSONValue, path: String, in range: ClosedRange<Int64>) throws(ClientError) -> Int64 {
        guard case .number(let number) = value else { throw ClientError(.wrongType(path, expected: "a number")) }
        let truncated = number.rounded(.towardZero)
        guard truncated >= Double(range.lowerBound), truncated <= Double(range.upperBound) else {
            throw ClientError(.outOfBounds(path, "not an integer from \(range.lowerBound) to \(range.upperBound)"))
        }
        return Int64(truncated)
    }

    /// A `sequence<…>` of at most `maximumCount` elements, each with its path (`hints[2]`).
    func array(_ key: String, maximumCount: Int) throws(ClientError) -> [(value: JSONValue, path: String)]? {
        guard let value = value(key) else { return nil }
        return try Self.array(value, path: name(key), maximumCount: maximumCount)
    }

    static func array(_ value: JSONValue, path: String, maximumCount: Int) throws(ClientError) -> [(
        value: JSONValue, path: String
    )] {
        guard case .array(let elements) = value else { throw ClientError(.wrongType(path, expected: "an array")) }
        guard elements.count <= maximumCount else {
            throw ClientError(.outOfBounds(path, "more than \(maximumCount) entries"))
        }
        return elements.enumerated().map { ($0.element, "\(path)[\($0.offset)]") }
    }

    /// A `sequence<DOMString>`.
    func strings(_ key: String, maximumCount: Int) throws(ClientError) -> [String]? {
        guard let elements = try array(key, maximumCount: maximumCount) else { return nil }
        var strings: [String] = []
        for element in elements {
            strings.append(try Self.string(element.value, path: element.path, maximumBytes: Self.maximumStringBytes))
        }
        return strings
    }

    /// A `Base64URLString` decoded: unpadded or padded base64url; anything else is an `EncodingError`.
    func bytes(_ key: String, count bounds: ClosedRange<Int>) throws(ClientError) -> [UInt8]? {
        guard let value = value(key) else { return nil }
        return try Self.bytes(value, path: name(key), count: bounds)
    }

    func requiredBytes(_ key: String, count bounds: ClosedRange<Int>) throws(ClientError) -> [UInt8] {
        try Self.bytes(try required(key), path: name(key), count: bounds)
    }

    static func bytes(_ value: JSONValue, path: String, count bounds: ClosedRange<Int>) throws(ClientError) -> [UInt8] {
        // Four characters carry three bytes; a longer text is refused before it is decoded.
        let text = try string(value, path: path, maximumBytes: (bounds.upperBound + 2) / 3 * 4 + 2)
        guard let bytes = [UInt8](base64URLEncoded: text) else { throw ClientError(.notBase64URL(path)) }
        guard bounds.contains(bytes.count) else {
            throw ClientError(
                .outOfBounds(path, "\(bytes.count) bytes; \(bounds.lowerBound) to \(bounds.upperBound) are allowed"))
        }
        return bytes
    }

    /// The longest `DOMString` member read, in bytes of UTF-8 (names, IDs, enumeration values).
    static let maximumStringBytes = 1024
}
