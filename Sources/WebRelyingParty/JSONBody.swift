import Basics
import JSON
import WebAuthn

/// Why a JSON request body (options request, `RegistrationResponseJSON`, `AuthenticationResponseJSON`) was refused
/// before anything else was looked at.
public enum JSONBodyError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The body is not a JSON object.
    case notJSON
    /// A required member is absent or null; the path names it (`response.clientDataJSON`).
    case missing(String)
    /// A member has the wrong JSON type.
    case wrongType(String, expected: String)
    /// A member that must be unpadded base64url is not.
    case notBase64URL(String)
    /// `id` is not the same string as `rawId` (WebAuthn L3 §5.1: `id` is `rawId` in base64url).
    case idDiffersFromRawID
    /// `type` is not `public-key`.
    case notPublicKey(String)
    /// A member is outside its bounds (too long, too many entries, characters not allowed).
    case outOfBounds(String, reason: String)

    public var description: String {
        switch self {
        case .notJSON: "the body is not a JSON object"
        case .missing(let path): "\(path) is missing"
        case .wrongType(let path, let expected): "\(path) is not \(expected)"
        case .notBase64URL(let path): "\(path) is not unpadded base64url"
        case .idDiffersFromRawID: "id differs from rawId"
        case .notPublicKey(let type): "type is \"\(type)\", not \"public-key\""
        case .outOfBounds(let path, let reason): "\(path): \(reason)"
        }
    }
}

/// A JSON object read with the strict reader of `JSON` (as `JSON.parse` reads it), with typed errors that name the
/// member's path.
struct JSONObject {
    private let members: [JSONMember]
    private let path: String

    init(_ json: [UInt8]) throws(JSONBodyError) {
        guard case .object(let members) = try? JSONValue(parsing: json) else { throw .notJSON }
        self.init(members: members, path: "")
    }

    private init(members: [JSONMember], path: String) {
        self.members = members
        self.path = path
    }

    private func name(_ key: String) -> String { path + key }

    /// 1 to 32 ASCII letters, digits and `-`: the shape of every transport, attachment and hint name WebAuthn defines.
    static func isToken(_ text: String) -> Bool {
        (1...32).contains(text.utf8.count)
            && text.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"):
                    true
                default: false
                }
            }
    }

    /// Reads only `response.clientDataJSON` of either response form, for finding the ceremony by its challenge
    /// before the rest is checked; nil when it cannot be read.
    func clientData() -> CollectedClientData? {
        guard let response = try? object("response"), let bytes = try? response.bytes("clientDataJSON") else {
            return nil
        }
        return try? CollectedClientData(jsonBytes: bytes)
    }

    /// The member, or nil when it is absent or JSON null.
    private func value(_ key: String) -> JSONValue? {
        guard let value = members.first(where: { $0.key == key })?.value, value != .null else { return nil }
        return value
    }

    func object(_ key: String) throws(JSONBodyError) -> JSONObject {
        guard let value = value(key) else { throw .missing(name(key)) }
        guard case .object(let members) = value else { throw .wrongType(name(key), expected: "an object") }
        return JSONObject(members: members, path: name(key) + ".")
    }

    func string(_ key: String) throws(JSONBodyError) -> String {
        guard let text = try optionalString(key) else { throw .missing(name(key)) }
        return text
    }

    func optionalString(_ key: String) throws(JSONBodyError) -> String? {
        guard let value = value(key) else { return nil }
        guard case .string(let text) = value else { throw .wrongType(name(key), expected: "a string") }
        return text
    }

    func optionalStrings(_ key: String, maximumCount: Int) throws(JSONBodyError) -> [String] {
        guard let value = value(key) else { return [] }
        guard case .array(let array) = value else { throw .wrongType(name(key), expected: "an array of strings") }
        guard array.count <= maximumCount else {
            throw .outOfBounds(name(key), reason: "more than \(maximumCount) entries")
        }
        var strings: [String] = []
        for element in array {
            guard case .string(let text) = element else {
                throw .wrongType(name(key), expected: "an array of strings")
            }
            strings.append(text)
        }
        return strings
    }

    func bytes(_ key: String) throws(JSONBodyError) -> [UInt8] {
        guard let bytes = try optionalBytes(key) else { throw .missing(name(key)) }
        return bytes
    }

    /// Unpadded base64url: browsers never pad, so `=` is refused rather than guessed at.
    func optionalBytes(_ key: String) throws(JSONBodyError) -> [UInt8]? {
        guard let text = try optionalString(key) else { return nil }
        guard let bytes = [UInt8](unpaddedBase64URLEncoded: text) else {
            throw .notBase64URL(name(key))
        }
        return bytes
    }

    /// `rawId`, checked against `id` and `type` (WebAuthn L3 §5.1).
    func credentialID() throws(JSONBodyError) -> [UInt8] {
        let type = try string("type")
        guard type == "public-key" else { throw .notPublicKey(type) }
        let id = try string("id")
        let rawID = try bytes("rawId")
        guard id == (try string("rawId")) else { throw .idDiffersFromRawID }
        guard (1...1023).contains(rawID.count) else {
            throw .outOfBounds("rawId", reason: "a credential ID is 1 to 1023 bytes (WebAuthn §7.1 step 24)")
        }
        return rawID
    }

    func attachment() throws(JSONBodyError) -> String? {
        guard let attachment = try optionalString("authenticatorAttachment") else { return nil }
        guard Self.isToken(attachment) else {
            throw .outOfBounds("authenticatorAttachment", reason: "not an attachment name")
        }
        return attachment
    }

    /// `clientExtensionResults` is required by the IDL but left out by some clients; when present it is an object.
    func checkExtensionResults() throws(JSONBodyError) {
        guard let value = value("clientExtensionResults") else { return }
        guard case .object = value else { throw .wrongType("clientExtensionResults", expected: "an object") }
    }
}
