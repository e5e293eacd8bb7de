import Basics
import Crypto
import Foundation
import JSON

// P-256 keys as JSON Web Keys (RFC 7517, RFC 7518 §6.2): `{"kty":"EC","crv":"P-256","x":…,"y":…}`, with `d` for a
// private key. The form CXP uses for an importer's HPKE key, and `passkey import-key new` writes.

extension P256.KeyAgreement.PublicKey {
    /// Reads a public JWK (JSON text). A JWK that also holds `d` is refused: a private key is not meant to travel.
    public init(jwkRepresentation: [UInt8]) throws(ExchangeError) {
        let fields = try JWKFields(json: ExchangeJSON.parse(jwkRepresentation, what: "the key file"))
        guard !fields.isPrivate else {
            throw ExchangeError(
                .invalidKey, "this is a private key (it has \"d\"); give the public key file (.pub.jwk) instead")
        }
        self = fields.publicKey
    }

    /// The key as a public JWK, compact JSON text.
    public var jwkRepresentation: [UInt8] { jwk.serialized() }

    var jwk: JSONValue {
        let point = Array(x963Representation)
        return .object([
            JSONMember("kty", .string("EC")), JSONMember("crv", .string("P-256")),
            JSONMember("x", .bytes(Array(point[1..<33]))), JSONMember("y", .bytes(Array(point[33..<65]))),
        ])
    }

    /// Reads a public JWK from parsed JSON (a CXP `hpke.key`).
    init(jwk: JSONValue) throws(ExchangeError) {
        self = try JWKFields(json: jwk).publicKey
    }
}

extension P256.KeyAgreement.PrivateKey {
    /// Reads a private JWK (JSON text): `d` must be there, and `x` and `y` must be its public key.
    public init(jwkRepresentation: [UInt8]) throws(ExchangeError) {
        let fields = try JWKFields(json: ExchangeJSON.parse(jwkRepresentation, what: "the key file"))
        guard let d = fields.d else {
            throw ExchangeError(.invalidKey, "this is a public key (it has no \"d\"); give the private key file")
        }
        let key: P256.KeyAgreement.PrivateKey
        do {
            key = try P256.KeyAgreement.PrivateKey(rawRepresentation: d)
        } catch {
            throw ExchangeError(.invalidKey, "the key's \"d\" is not a P-256 private key")
        }
        guard key.publicKey.x963Representation == fields.publicKey.x963Representation else {
            throw ExchangeError(.invalidKey, "the key's \"x\" and \"y\" are not the public key of its \"d\"")
        }
        self = key
    }

    /// The key as a private JWK, compact JSON text: a secret, to be written only to a 0600 file.
    public var jwkRepresentation: [UInt8] {
        guard case .object(var members) = publicKey.jwk else { return [] }
        members.append(JSONMember("d", .bytes(Array(rawRepresentation))))
        return JSONValue.object(members).serialized()
    }
}

/// The members of an EC P-256 JWK, checked: `kty` EC, `crv` P-256, 32-byte `x` and `y` on the curve, 32-byte `d`.
private struct JWKFields {
    var publicKey: P256.KeyAgreement.PublicKey
    var d: [UInt8]?
    var isPrivate: Bool { d != nil }

    init(json: JSONValue) throws(ExchangeError) {
        let fields = try JSONFields(json, path: "the key")
        guard try fields.requiredString("kty") == "EC", try fields.requiredString("crv") == "P-256" else {
            throw ExchangeError(.invalidKey, "the key is not an EC P-256 JWK (kty \"EC\", crv \"P-256\")")
        }
        let x = try fields.requiredBytes("x")
        let y = try fields.requiredBytes("y")
        guard x.count == 32, y.count == 32 else {
            throw ExchangeError(.invalidKey, "the key's \"x\" and \"y\" must be 32 bytes each")
        }
        do {
            publicKey = try P256.KeyAgreement.PublicKey(x963Representation: [0x04] + x + y)
        } catch {
            throw ExchangeError(.invalidKey, "the key's \"x\" and \"y\" are not a point on P-256")
        }
        d = try fields.bytes("d")
        if let d, d.count != 32 {
            throw ExchangeError(.invalidKey, "the key's \"d\" must be 32 bytes")
        }
    }
}
