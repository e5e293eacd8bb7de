import Crypto
import Foundation

extension Digest {
    /// The digest's bytes in one copy. `Array(digest)` goes through `Sequence` and costs far more on hot paths.
    public var bytes: [UInt8] { self.withUnsafeBytes { Array($0) } }
}
