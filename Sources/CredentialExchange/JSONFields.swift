import Basics
import JSON

/// The members of one JSON object, read with the path that error messages name (`accounts[0].items[1].title`).
///
/// `null` reads as absent, as the CXF and Bitwarden writers use it for "no value". Every failure is an
/// `ExchangeError` naming the path and what was expected there; values are never quoted, since some are secrets.
struct JSONFields {
    let path: String
    private let members: [JSONMember]

    init(_ value: JSONValue, path: String) throws(ExchangeError) {
        guard case .object(let members) = value else {
            throw ExchangeError(.malformedJSON, "\(Self.name(path)) must be an object")
        }
        self.members = members
        self.path = path
    }

    /// The path of member `key`.
    func name(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    static func name(_ path: String) -> String { path.isEmpty ? "the document" : path }

    func has(_ key: String) -> Bool { value(key) != nil }

    func value(_ key: String) -> JSONValue? {
        guard let value = members.first(where: { $0.key == key })?.value, value != .null else { return nil }
        return value
    }

    func required(_ key: String) throws(ExchangeError) -> JSONValue {
        guard let value = value(key) else { throw ExchangeError(.missingField, "\(name(key)) is missing") }
        return value
    }

    func string(_ key: String) throws(ExchangeError) -> String? {
        guard let value = value(key) else { return nil }
        guard case .string(let text) = value else { throw wrongType(key, "a string") }
        return text
    }

    func requiredString(_ key: String) throws(ExchangeError) -> String {
        guard case .string(let text) = try required(key) else { throw wrongType(key, "a string") }
        return text
    }

    /// Base64url, padded or not.
    func bytes(_ key: String) throws(ExchangeError) -> [UInt8]? {
        guard let text = try string(key) else { return nil }
        guard let bytes = [UInt8](base64URLEncoded: text) else {
            throw ExchangeError(.invalidValue, "\(name(key)) is not base64url")
        }
        return bytes
    }

    func requiredBytes(_ key: String) throws(ExchangeError) -> [UInt8] {
        _ = try required(key)
        return try bytes(key)!
    }

    /// A whole number from 0 to 2^53, the range JSON numbers carry exactly.
    func unsigned(_ key: String) throws(ExchangeError) -> UInt64? {
        guard let value = value(key) else { return nil }
        guard case .number(let number) = value, number >= 0, number <= 9_007_199_254_740_992,
            number.rounded(.towardZero) == number
        else { throw wrongType(key, "a whole number from 0 to 2^53") }
        return UInt64(number)
    }

    func requiredUnsigned(_ key: String) throws(ExchangeError) -> UInt64 {
        _ = try required(key)
        return try unsigned(key)!
    }

    func bool(_ key: String) throws(ExchangeError) -> Bool? {
        guard let value = value(key) else { return nil }
        guard case .bool(let flag) = value else { throw wrongType(key, "true or false") }
        return flag
    }

    func array(_ key: String) throws(ExchangeError) -> [JSONValue]? {
        guard let value = value(key) else { return nil }
        guard case .array(let elements) = value else { throw wrongType(key, "an array") }
        return elements
    }

    func requiredArray(_ key: String) throws(ExchangeError) -> [JSONValue] {
        guard case .array(let elements) = try required(key) else { throw wrongType(key, "an array") }
        return elements
    }

    private func wrongType(_ key: String, _ expected: String) -> ExchangeError {
        ExchangeError(.invalidValue, "\(name(key)) must be \(expected)")
    }
}

/// Parsing JSON text for the exchange formats: the strict RFC 8259 reader of `JSON`, with limits for
/// files (import files are bigger than WebAuthn options).
enum ExchangeJSON {
    /// The largest JSON text read: 32 MiB, far above thousands of passkeys.
    static let maximumBytes = 32 << 20

    static func parse(_ bytes: [UInt8], what: String) throws(ExchangeError) -> JSONValue {
        guard bytes.count <= maximumBytes else {
            throw ExchangeError(
                .tooLarge, "\(what) is \(bytes.count) bytes, above the limit of \(maximumBytes >> 20) MiB")
        }
        var limits = JSONValue.Limits()
        limits.maximumBytes = maximumBytes
        limits.maximumDepth = 64
        do {
            return try JSONValue(parsing: bytes, limits: limits)
        } catch {
            throw ExchangeError(.malformedJSON, "\(what) is not valid JSON (\(error))")
        }
    }
}

extension JSONValue {
    static func bytes(_ bytes: [UInt8]) -> JSONValue { .string(bytes.base64URLEncodedString) }
}
