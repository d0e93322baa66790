// StallSample: an iOS app that stalls its main thread in the ways real apps
// do, for the first run of stallwatch against a device (CHECKLIST.md).
// Started with the argument -autostall it runs every stall once, two
// seconds after launch, so nobody has to tap.
import UIKit

@main
final class AppDelegate: UIResponder, UIApplicationDelegate {
    var window: UIWindow?

    func application(_ application: UIApplication,
                     didFinishLaunchingWithOptions launchOptions: [UIApplication.LaunchOptionsKey: Any]?) -> Bool {
        let window = UIWindow(frame: UIScreen.main.bounds)
        let controller = StallViewController()
        window.rootViewController = controller
        window.makeKeyAndVisible()
        self.window = window
        if ProcessInfo.processInfo.arguments.contains("-autostall") {
            DispatchQueue.main.asyncAfter(deadline: .now() + 2) { controller.runAll() }
        }
        return true
    }
}
