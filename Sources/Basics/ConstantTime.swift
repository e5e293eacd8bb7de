/// Compares two byte strings in time that depends only on their lengths (different lengths are unequal at once: a
/// length is not a secret here). The one comparison of secrets (PIN hashes, MACs, passphrase checks, passwords) of
/// every module.
public func constantTimeEqual<Left: Collection<UInt8>, Right: Collection<UInt8>>(_ lhs: Left, _ rhs: Right) -> Bool {
    guard lhs.count == rhs.count else { return false }
    var difference: UInt8 = 0
    for (left, right) in zip(lhs, rhs) { difference |= left ^ right }
    return difference == 0
}
