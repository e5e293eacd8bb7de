import Basics
import CBOR
import Foundation
import Testing

extension HybridVectors {
    /// The entries of one section decoded as `T`; a missing or empty section fails the calling test loudly.
    static func decodedSection<T: Decodable>(_ name: String, as type: T.Type = T.self) throws -> [T] {
        let entries = try section(name)
        try #require(!entries.isEmpty, "section \(name) of hybrid.json is empty")
        let data = try JSONSerialization.data(withJSONObject: entries)
        return try JSONDecoder().decode([T].self, from: data)
    }

    /// The bytes of a hex string from the vectors (either case); malformed hex fails the calling test.
    static func hexBytes(_ hex: String) throws -> [UInt8] {
        try #require([UInt8](hex: hex), "\(hex) in hybrid.json is not hex")
    }
}
