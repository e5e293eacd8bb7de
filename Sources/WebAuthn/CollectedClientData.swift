import Basics
import Foundation
import JSON

/// Why clientDataJSON was refused.
public enum ClientDataError: Error, Hashable, Sendable {
    /// Not a JSON object with text `type`, `challenge` and `origin`.
    case malformed(String)
}

/// The client data a browser collects and hashes (WebAuthn §5.8.1).
public struct CollectedClientData: Hashable, Sendable {
    /// `webauthn.create` for registration, `webauthn.get` for authentication.
    public enum CeremonyType: String, Hashable, Sendable {
        case create = "webauthn.create"
        case get = "webauthn.get"
    }

    public var type: String
    public var challenge: [UInt8]
    public var origin: String
    public var crossOrigin: Bool
    public var topOrigin: String?

    public init(
        type: CeremonyType, challenge: [UInt8], origin: String, crossOrigin: Bool = false,
        topOrigin: String? = nil
    ) {
        self.type = type.rawValue
        self.challenge = challenge
        self.origin = origin
        self.crossOrigin = crossOrigin
        self.topOrigin = topOrigin
    }

    /// The JSON a browser would produce, built with the limited serialization of WebAuthn
    /// §5.8.1.1: `type`, `challenge`, `origin`, `crossOrigin`, then `topOrigin` when present.
    public var jsonBytes: [UInt8] {
        var json = "{\"type\":" + Self.quoted(type)
        json += ",\"challenge\":" + Self.quoted(challenge.base64URLEncodedString)
        json += ",\"origin\":" + Self.quoted(origin)
        json += ",\"crossOrigin\":" + (crossOrigin ? "true" : "false")
        if let topOrigin { json += ",\"topOrigin\":" + Self.quoted(topOrigin) }
        return Array((json + "}").utf8)
    }

    /// Parses clientDataJSON with a full JSON parser, as relying parties must (WebAuthn §7.1 step 5).
    public init(jsonBytes: [UInt8]) throws(ClientDataError) {
        guard let object = try? JSONValue(parsing: jsonBytes), case .object = object else {
            throw .malformed("clientDataJSON is not a JSON object")
        }
        guard case .string(let type) = object["type"] else {
            throw .malformed("type is missing or not a string")
        }
        guard case .string(let challengeText) = object["challenge"],
            let challenge = [UInt8](base64URLEncoded: challengeText)
        else { throw .malformed("challenge is missing or not base64url") }
        guard case .string(let origin) = object["origin"] else {
            throw .malformed("origin is missing or not a string")
        }
        self.type = type
        self.challenge = challenge
        self.origin = origin
        if case .bool(true) = object["crossOrigin"] { self.crossOrigin = true } else { self.crossOrigin = false }
        if case .string(let topOrigin) = object["topOrigin"] {
            self.topOrigin = topOrigin
        } else {
            self.topOrigin = nil
        }
    }

    /// CCDToString (WebAuthn §5.8.1.2): quote, escape `"` and `\`, and escape control characters.
    static func quoted(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case _ where scalar.value < 0x20:
                result += String(format: "\\u%04x", scalar.value)
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
