import Basics
import CBOR
import Crypto
import Foundation
import Testing

/// The vector files made by Tools/vectors/make_noise_vectors.py (Python `cryptography`, independent of the Swift
/// code). Missing files, sections or fields fail the calling test loudly.
enum NoiseVectors {
    /// The `vectors` member of a generated file, after checking that it names its generator script.
    static func document(_ name: String) throws -> Any {
        let url = try #require(
            Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Vectors"),
            "\(name).json is missing from the test bundle")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any], "\(name).json")
        #expect(object["source"] as? String == "Tools/vectors/make_noise_vectors.py")
        return try #require(object["vectors"], "\(name).json has no vectors")
    }

    /// The handshake known answers, one object per handshake kind; an empty list fails.
    static func handshakes() throws -> [[String: Any]] {
        let list = try #require(try document("noise-known-answers") as? [[String: Any]])
        try #require(!list.isEmpty, "noise-known-answers.json has no vectors")
        return list
    }

    /// The crypter known answers.
    static func crypter() throws -> [String: Any] {
        try #require(try document("crypter-known-answers") as? [String: Any])
    }
}

extension Dictionary where Key == String, Value == Any {
    /// A hex field as bytes; a missing or malformed field fails the test.
    func hex(_ key: String) throws -> [UInt8] {
        let text = try #require(self[key] as? String, "field \(key) is missing")
        return try #require([UInt8](hex: text), "field \(key) is not hex")
    }

    /// A nested object.
    func object(_ key: String) throws -> [String: Any] {
        try #require(self[key] as? [String: Any], "field \(key) is missing")
    }

    /// A list of hex strings as byte arrays; an empty list fails.
    func hexList(_ key: String) throws -> [[UInt8]] {
        let list = try #require(self[key] as? [String], "field \(key) is missing")
        try #require(!list.isEmpty, "field \(key) is empty")
        return try list.map { try #require([UInt8](hex: $0), "field \(key) is not hex") }
    }
}

/// P-256 keys from the 32-byte big-endian scalars the vector files hold.
func keyAgreementKey(_ scalar: [UInt8]) throws -> P256.KeyAgreement.PrivateKey {
    try P256.KeyAgreement.PrivateKey(rawRepresentation: scalar)
}

/// Flips one bit.
func flipping(_ bytes: [UInt8], bit: Int) -> [UInt8] {
    var copy = bytes
    copy[bit / 8] ^= 1 << UInt8(bit % 8)
    return copy
}
