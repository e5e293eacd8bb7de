import Basics
import CBOR
import JSON
import WebAuthn

/// What a browser's response holds, decoded for a person reading the page (`rp serve`'s "what the authenticator
/// returned"): the client data as the JSON object it is, the authenticator data field by field (the RP ID hash, each
/// flag by name, the signature counter, the AAGUID, the credential ID and its public key as a JWK), the attestation
/// statement with its byte strings summarized, and the assertion's signature. Decoded from the body as it arrived,
/// so a refused response is shown too; a part that does not decode says why in its place, and the rest is shown.
public enum DecodedResponse {
    /// The decoded view of a `RegistrationResponseJSON` or `AuthenticationResponseJSON` body, or nil when the body is
    /// not a JSON object with a `response` object.
    public static func decode(_ body: [UInt8]) -> JSONValue? {
        guard case .object(let members)? = try? JSONValue(parsing: body),
            case .object(let response)? = members.first(where: { $0.key == "response" })?.value
        else { return nil }
        func bytes(_ key: String) -> [UInt8]? {
            guard case .string(let text)? = response.first(where: { $0.key == key })?.value else { return nil }
            return [UInt8](base64URLEncoded: text)
        }
        var decoded: [(String, JSONValue?)] = [("clientData", bytes("clientDataJSON").map(clientData))]
        if let attestation = bytes("attestationObject") {
            decoded.append(("attestation", attestationObject(attestation)))
        } else {
            decoded.append(("authenticatorData", bytes("authenticatorData").map(authenticatorData)))
            decoded.append(("signature", bytes("signature").map(signature)))
            decoded.append(("userHandle", bytes("userHandle").map { .string($0.base64URLEncodedString) }))
        }
        return .object(omittingNil: decoded)
    }

    static func clientData(_ bytes: [UInt8]) -> JSONValue {
        (try? JSONValue(parsing: bytes)) ?? failure("clientDataJSON is not JSON")
    }

    static func attestationObject(_ bytes: [UInt8]) -> JSONValue {
        // Read as CBOR first, so that an attestation the verifier cannot use (another key type) is still shown.
        guard case .map(let map)? = try? CBORDecoder().decode(bytes) else {
            return failure("the attestation object is not a CBOR map")
        }
        let format: JSONValue? = if case .text(let text)? = map[.text("fmt")] { .string(text) } else { nil }
        let authData: JSONValue? =
            if case .bytes(let data)? = map[.text("authData")] { authenticatorData(data) } else { nil }
        return .object(omittingNil: [
            ("format", format), ("statement", map[.text("attStmt")].map(summary)), ("authenticatorData", authData),
        ])
    }

    static func authenticatorData(_ bytes: [UInt8]) -> JSONValue {
        let data: AuthenticatorData
        do {
            data = try AuthenticatorData(bytes: bytes)
        } catch {
            // The fixed part is still worth showing when the credential's key is of a kind this package does not read.
            guard bytes.count >= 37 else { return failure("authenticator data of \(bytes.count) bytes, fewer than 37") }
            return .object(omittingNil: [
                ("rpIdHash", .string(bytes[0..<32].hexString)),
                ("flags", flags(AuthenticatorFlags(rawValue: bytes[32]))),
                ("signCount", .integer(bytes[33..<37].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })),
                ("error", .string("the rest (the attested credential or the extensions) does not decode")),
            ])
        }
        var members: [(String, JSONValue?)] = [
            ("rpIdHash", .string(data.relyingPartyIDHash.hexString)), ("flags", flags(data.flags)),
            ("signCount", .integer(data.signCount)),
        ]
        if let attested = data.attestedCredentialData {
            members += [
                ("aaguid", .string(attested.aaguid.description)),
                ("credentialId", .string(attested.credentialID.base64URLEncodedString)),
                ("credentialPublicKey", jwk(attested.publicKey)),
            ]
        }
        members.append(("extensions", data.extensions.map(summary)))
        return .object(omittingNil: members)
    }

    /// Each flag by its name in WebAuthn §6.1, and the byte as it is.
    static func flags(_ flags: AuthenticatorFlags) -> JSONValue {
        .object(omittingNil: [
            ("userPresent", .bool(flags.contains(.userPresent))),
            ("userVerified", .bool(flags.contains(.userVerified))),
            ("backupEligible", .bool(flags.contains(.backupEligible))),
            ("backupState", .bool(flags.contains(.backupState))),
            ("attestedCredentialData", .bool(flags.contains(.attestedCredentialData))),
            ("extensionData", .bool(flags.contains(.extensionData))),
            ("byte", .string("0x" + [flags.rawValue].hexString)),
        ])
    }

    /// The key as a JSON Web Key (RFC 7517/7518, Ed25519 as RFC 8037's OKP), with its COSE algorithm's name.
    static func jwk(_ key: COSEKey) -> JSONValue {
        let members: [(String, JSONValue?)] =
            switch key.material {
            case .p256(let x, let y):
                [
                    ("kty", .string("EC")), ("crv", .string("P-256")), ("x", .string(x.base64URLEncodedString)),
                    ("y", .string(y.base64URLEncodedString)),
                ]
            case .ed25519(let x):
                [("kty", .string("OKP")), ("crv", .string("Ed25519")), ("x", .string(x.base64URLEncodedString))]
            case .rsa(let n, let e):
                [
                    ("kty", .string("RSA")), ("n", .string(n.base64URLEncodedString)),
                    ("e", .string(e.base64URLEncodedString)),
                ]
            }
        return .object(omittingNil: members + [("alg", .string(key.algorithm.description))])
    }

    static func signature(_ bytes: [UInt8]) -> JSONValue {
        .object(omittingNil: [("bytes", .integer(bytes.count)), ("hex", .string(bytes.hexString))])
    }

    /// CBOR as JSON for reading: integers and text as they are, short byte strings in hex, long ones (certificates)
    /// by their size, map keys as text.
    static func summary(_ value: CBORValue) -> JSONValue {
        switch value {
        case .unsigned, .negative: return value.intValue.map { .integer($0) } ?? .string("a large integer")
        case .bytes(let bytes):
            return bytes.count <= 64 ? .string("h'\(bytes.hexString)'") : .string("\(bytes.count) bytes")
        case .text(let text): return .string(text)
        case .array(let items): return .array(items.map(summary))
        case .map(let map):
            let members = map.map { key, value in JSONMember(keyText(key), summary(value)) }
            return .object(members.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) })
        case .bool(let flag): return .bool(flag)
        case .null: return .null
        case .float(let number): return .number(number)
        }
    }

    private static func keyText(_ key: CBORValue) -> String {
        switch key {
        case .text(let text): return text
        case .unsigned, .negative: return key.intValue.map(String.init) ?? "integer"
        default: return "\(summary(key))"
        }
    }

    private static func failure(_ reason: String) -> JSONValue { .object([JSONMember("error", .string(reason))]) }
}
