// swift-tools-version:5.3
//
// stallwatch's agent as a Swift package, for Xcode's "Add Package
// Dependency": a binary target, Stallwatch.xcframework, built from the C
// agent with `ninja -C build xcframework` (README, "Into an iOS app").
// The agent stays inert in apps without the get-task-allow entitlement,
// so a Release build that still links it opens no port and installs no
// observer; to keep it out of Release builds entirely, link it for the
// Debug configuration only (README).
import PackageDescription

let package = Package(
    name: "Stallwatch",
    platforms: [.iOS(.v14), .macOS(.v10_15)],
    products: [
        .library(name: "Stallwatch", targets: ["Stallwatch"]),
    ],
    targets: [
        .binaryTarget(name: "Stallwatch", path: "Stallwatch.xcframework"),
    ]
)
