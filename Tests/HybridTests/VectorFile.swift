import Foundation
import Testing

/// ../shared/vectors/hybrid.json, copied into the test bundle with its `source` fields.
enum HybridVectors {
    static let url = Bundle.module.url(forResource: "hybrid", withExtension: "json", subdirectory: "Vectors")!

    /// The whole file as JSON objects; a missing section fails the calling test loudly.
    static func section(_ name: String) throws -> [Any] {
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as! [String: Any]
        return try #require(object[name] as? [Any], "section \(name) is missing from hybrid.json")
    }
}
