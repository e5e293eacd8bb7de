import Basics
import Crypto
import JSON

/// The Credential Exchange Protocol (CXP, working draft) `ExportResponse`: a CXF document sealed with HPKE to the
/// importing provider's public key, in the JSON shape CXP gives it.
///
/// ```json
/// {"version": 0,
///  "hpke": {"mode": "base", "kem": 16, "kdf": 1, "aead": 2, "key": <the sender's encapsulated key as a P-256 JWK>},
///  "exporter": "passkey.local",
///  "payload": <base64url of the sealed CXF JSON>}
/// ```
///
/// The draft leaves open where the HPKE encapsulated key travels; here it is `hpke.key`, the member CXP's
/// `HpkeParameters` has for a key, as a JWK (`Docs/Exchange.md`). The CXF plaintext exists only in memory.
public struct ExportResponse: Sendable {
    /// The CXP version this program writes and reads.
    public static let version: UInt64 = 0
    /// HPKE `info` for an export: binds the payload to this use.
    public static let info = Array("passkey CXP ExportResponse v0".utf8)
    /// The largest payload read (the sealed CXF JSON).
    public static let maximumPayloadBytes = 24 << 20

    /// The exporting provider's relying party ID.
    public var exporter: String
    /// The sealed CXF JSON.
    public var sealed: ExchangeHPKE.Sealed

    public init(exporter: String, sealed: ExchangeHPKE.Sealed) {
        self.exporter = exporter
        self.sealed = sealed
    }

    /// Seals `document` to the importer's public key.
    public init(sealing document: CXF.Header, to importer: P256.KeyAgreement.PublicKey) throws(ExchangeError) {
        exporter = document.exporterRpId
        sealed = try ExchangeHPKE.seal(document.jsonBytes, to: importer, info: Self.info)
    }

    /// Opens the payload with the importer's private key and reads the CXF document in it.
    public func open(with importerKey: P256.KeyAgreement.PrivateKey) throws(ExchangeError) -> CXF.Header {
        try CXF.Header(jsonBytes: ExchangeHPKE.open(sealed, with: importerKey, info: Self.info))
    }

    /// Reads an `ExportResponse`: version 0, HPKE base mode with KEM 16, KDF 1 and AEAD 2, and the key in `hpke.key`.
    public init(jsonBytes: [UInt8]) throws(ExchangeError) {
        try self.init(json: ExchangeJSON.parse(jsonBytes, what: "the export file"))
    }

    init(json: JSONValue) throws(ExchangeError) {
        let fields = try JSONFields(json, path: "")
        let version = try fields.requiredUnsigned("version")
        guard version == Self.version else {
            throw ExchangeError(
                .unsupportedVersion, "the export is CXP version \(version); this program reads version \(Self.version)")
        }
        let hpke = try JSONFields(fields.required("hpke"), path: "hpke")
        let mode = try hpke.requiredString("mode")
        let suite = (
            try hpke.requiredUnsigned("kem"), try hpke.requiredUnsigned("kdf"), try hpke.requiredUnsigned("aead")
        )
        guard mode == "base", suite == (0x0010, 0x0001, 0x0002) else {
            throw ExchangeError(
                .unsupportedAlgorithm,
                "the export uses HPKE mode \(mode.debugDescription) with KEM \(suite.0), KDF \(suite.1), AEAD \(suite.2); "
                    + "this program reads base mode with DHKEM(P-256) 16, HKDF-SHA256 1, AES-256-GCM 2")
        }
        let encapsulated = try P256.KeyAgreement.PublicKey(jwk: hpke.required("key"))
        exporter = try fields.requiredString("exporter")
        let payload = try fields.requiredBytes("payload")
        guard payload.count <= Self.maximumPayloadBytes else {
            throw ExchangeError(.tooLarge, "the export's payload is larger than \(Self.maximumPayloadBytes >> 20) MiB")
        }
        sealed = ExchangeHPKE.Sealed(encapsulatedKey: Array(encapsulated.x963Representation), ciphertext: payload)
    }

    /// The response as JSON text.
    public var jsonBytes: [UInt8] {
        let key: JSONValue
        if let point = try? P256.KeyAgreement.PublicKey(x963Representation: sealed.encapsulatedKey) {
            key = point.jwk
        } else {
            key = .null
        }
        return JSONValue.object(omittingNil: [
            ("version", .integer(Self.version)),
            (
                "hpke",
                .object([
                    JSONMember("mode", .string("base")), JSONMember("kem", .number(0x0010)),
                    JSONMember("kdf", .number(0x0001)), JSONMember("aead", .number(0x0002)), JSONMember("key", key),
                ])
            ),
            ("exporter", .string(exporter)),
            ("payload", .bytes(sealed.ciphertext)),
        ]).serialized(.pretty)
    }
}
